"""Pollux's placement mends a plan it had to cut (``pollux_place.fill``, rule 6): GPUs left free
by node fragmentation or interference avoidance go to the jobs whose speedup gains from them,
as the artifact's node-level search would hand them out (Pollux OSDI'21 §4.2; petuum/adaptdl
``osdi21-artifact`` ``simulator/pollux.py``: mutation adds replicas where nodes have room)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job

from dlsched.policies.elastic.pollux_place import Request, fill
from dlsched.policies.pollux import PolluxAllocator
from dlsched.workload.job import Job, JobStatus

INF = float("inf")
LINEAR = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]  # utility rising by 1 a worker, 5 workers at most


def running_on(job_id: str, gpus: tuple[int, ...]) -> Job:
    """An elastic 1..8 job without a goodput profile (valued linearly), running on ``gpus``."""
    job = Job(make_job(job_id).gpus(len(gpus)).elastic(1, 8).work(1e6).build())
    job.set_status(JobStatus.RUNNING)
    job.allocation, job.shares = gpus, (1.0,) * len(gpus)
    return job


def test_gpus_left_by_fragmentation_are_used() -> None:
    # 4 nodes x 4 GPUs; d runs 1 GPU on each node (distributed), a and b 3 on nodes 0 and 1,
    # w waits. The fair plan is 4 each, but no node has 4 free and every node holds the
    # distributed d: a, b and w shrink to 3 on one node, so node 3's 3 other GPUs were left
    # idle (13 of 16 GPUs used). d, the job already on node 3, takes them.
    cluster = make_cluster(nodes=4, gpus=4, gpu_type="V100")
    jobs = [running_on("d", (0, 4, 8, 12)), running_on("a", (1, 2, 3)),
            running_on("b", (5, 6, 7)), Job(make_job("w").elastic(1, 8).work(1e6).build())]
    used = {g: 1.0 for job in jobs for g in job.allocation}
    state = cycle_state(cluster, used, waiting=jobs[3:], running=jobs[:3], now=3600.0)
    got = {j: dict(a.per_node()) for j, a in PolluxAllocator().allocate(state).items()}
    assert sum(sum(n.values()) for n in got.values()) == 16, got
    assert got["d"] == {0: 1, 1: 1, 2: 1, 3: 4}
    assert (got["a"], got["b"]) == ({0: 3}, {1: 3})  # kept where they ran: no restart


@pytest.mark.parametrize(("placed", "free", "rows", "allowed", "expected"), [
    # a single-node job grows where it is
    pytest.param([(0, 0)], [2, 0], [LINEAR], None, [(0, 0, 0, 0)], id="grow-in-place"),
    # a single-node job moves whole onto a node with more room (2 -> 3 on node 1)
    pytest.param([(0, 0)], [0, 3], [LINEAR], None, [(1, 1, 1)], id="move-whole"),
    # the move goes to the node that fits it most tightly (node 2's 2 GPUs, not node 1's 3)
    pytest.param([(0,)], [0, 3, 2], [[0.0, 1.0, 2.0, 2.0, 2.0]], None, [(2, 2)],
                 id="move-best-fit"),
    # a job with nothing starts on the node with room
    pytest.param([()], [0, 2], [LINEAR], None, [(1, 1)], id="start"),
    # a distributed job widens on its own nodes, not on others
    pytest.param([(0, 1)], [1, 1], [LINEAR], None, [(0, 0, 1, 1)], id="distributed-widens"),
    # a single-node job does not spread: node 1's GPU is not enough to move there
    pytest.param([(0, 0)], [0, 1], [LINEAR], None, [(0, 0)], id="no-spread"),
    # no gain, no change (the utility is flat above 2 workers)
    pytest.param([(0, 0)], [2, 0], [[0.0, 1.0, 2.0, 2.0, 2.0]], None, [(0, 0)], id="no-gain"),
    # a job stays off nodes it may not use
    pytest.param([()], [0, 2], [LINEAR], [True, False], [()], id="mask"),
    # the larger gain per GPU first: job 1 (3 a worker) takes node 1's 2 GPUs before job 0
    pytest.param([(0,), ()], [0, 2], [LINEAR, [0.0, 3.0, 6.0, 6.0, 6.0, 6.0]], None,
                 [(0,), (1, 1)], id="best-gain-first"),
])
def test_fill(placed: list[tuple[int, ...]], free: list[int], rows: list[list[float]],
              allowed: list[bool] | None, expected: list[tuple[int, ...]]) -> None:
    capacity = np.array(free) + np.bincount([n for p in placed for n in p], minlength=len(free))
    mask = None if allowed is None else np.array(allowed)
    requests = [Request(len(p), 1, Counter(p), mask) for p in placed]
    width = max(map(len, rows))
    utility = np.array([r + [-INF] * (width - len(r)) for r in rows])
    assert fill(requests, capacity, placed, utility) == expected
