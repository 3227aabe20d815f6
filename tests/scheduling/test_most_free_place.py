"""The Pollux artifact's Optimus placement (simulator/optimus.py): kept when the count is
unchanged, else smallest job first, each chunk on the node with the most free GPUs."""

from __future__ import annotations

import numpy as np
from builders import cycle_state, make_cluster, make_job

from dlsched.scheduling.most_free_place import most_free_nodes, place_most_free
from dlsched.workload.job import Job


def test_chunks_go_to_the_node_with_most_room_lowest_index_on_ties() -> None:
    room = np.array([2, 4, 3, 4])
    assert most_free_nodes(6, room, np.ones(4, dtype=bool)) == (1, 1, 1, 1, 3, 3)
    assert room.tolist() == [2, 0, 3, 2]
    assert most_free_nodes(9, room, np.ones(4, dtype=bool)) is None  # 7 free: untouched
    assert room.tolist() == [2, 0, 3, 2]


def test_smallest_job_first_spreads_the_large_one() -> None:
    # 3 nodes x 4: a (1 GPU) goes first to node 0; b (8) then takes nodes 1, 2 (4 each)
    # fewest-node placement would place b first on nodes 0-1 and a on node 2
    jobs = {j.job_id: j for j in (Job(make_job("b").gpus(8).build()),
                                  Job(make_job("a").at(1).build()))}
    state = cycle_state(make_cluster(nodes=3, gpus=4), waiting=list(jobs.values()))
    got = place_most_free(state, {"b": 8, "a": 1}, jobs, np.array([4, 4, 4]))
    assert got["a"].nodes == (0,)
    assert got["b"].nodes == (1, 1, 1, 1, 2, 2, 2, 2)


def test_a_running_job_of_unchanged_size_keeps_its_gpus() -> None:
    kept = Job(make_job("k").gpus(2).build())
    kept.allocation = (6, 7)  # node 1 (4 GPUs per node)
    grown = Job(make_job("g").at(1).gpus(2).build())
    grown.allocation = (0, 1)
    jobs = {"k": kept, "g": grown}
    state = cycle_state(make_cluster(nodes=2, gpus=4), running=[kept, grown])
    got = place_most_free(state, {"k": 2, "g": 3}, jobs, np.array([4, 4]))
    assert got["k"].nodes == (1, 1)
    assert sorted(got["g"].nodes) == [0, 0, 0]  # re-placed: node 0 has the most room
