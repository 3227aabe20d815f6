"""Gavel's round placement (``gavel.assign.place_round``): who keeps its nodes, who moves."""

from __future__ import annotations

import numpy as np

from dlsched.policies.gavel.assign import place_round

# Nodes 0, 1: type 0 (2 GPUs each); node 2: type 1 (4 GPUs).
NODE_TYPE = np.array([0, 0, 1])


def test_one_worker_jobs_keep_their_node_while_it_has_room_the_rest_move() -> None:
    room = np.array([2, 2, 4])
    types = {"a": 0, "b": 0, "c": 0, "d": 1}
    workers = {"a": 1, "b": 1, "c": 1, "d": 1}
    # a and b stay on node 0; c held node 0 too but finds it full; d changes type
    current = {"a": (0,), "b": (0,), "c": (0,), "d": (1,)}
    placed = place_round(types, workers, current, NODE_TYPE, room)
    assert placed == {"a": (0,), "b": (0,), "c": (1,), "d": (2,)}
    assert room.tolist() == [0, 1, 3]


def test_a_gang_keeps_its_nodes_or_moves_whole_largest_gangs_first() -> None:
    room = np.array([2, 2, 4])
    types = {"g": 0, "h": 1, "s": 1}
    workers = {"g": 2, "h": 3, "s": 1}
    current = {"g": (0, 1), "h": (0, 0, 1)}  # h moves to type 1, where s waits
    placed = place_round(types, workers, current, NODE_TYPE, room)
    assert placed == {"g": (0, 1), "h": (2, 2, 2), "s": (2,)}
    assert room.tolist() == [1, 1, 0]
