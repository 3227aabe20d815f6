"""Gavel's round placement (``gavel.assign.place_round``): who keeps its nodes, who moves."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_one_worker_moves_are_placed_inline_on_the_tightest_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A moving one-worker job takes the tightest node of its type with room (the first of
    # equals), as ``_place_listed`` chooses, without calling it (~22% of ``place_round``'s
    # instructions over a 1,000-job FIFO run's walked rounds); gangs still call it.
    from dlsched.policies.gavel import assign

    listed, place = [], assign._place_listed
    monkeypatch.setattr(assign, "_place_listed",
                        lambda need, nodes, room: listed.append(need) or place(need, nodes, room))
    node_type = np.array([0, 0, 0, 1, 1])
    for seed in range(200):
        rng = np.random.default_rng(seed)
        room = rng.integers(0, 4, size=5)
        jobs = [f"j{i}" for i in range(int(rng.integers(1, 9)))]
        workers = {job: int(rng.choice([1, 1, 2, 3])) for job in jobs}
        types = {job: int(rng.integers(0, 2)) for job in jobs}
        expected, left = {}, room.tolist()
        for minus, job in sorted((-workers[job], job) for job in jobs):
            nodes = place(-minus, [n for n in range(5) if node_type[n] == types[job]], left)
            if nodes is not None:
                expected[job] = nodes
        listed.clear()
        placed = place_round(types, workers, {}, node_type, room)
        assert placed == expected and room.tolist() == left
        assert sorted(listed) == sorted(workers[job] for job in jobs if workers[job] > 1)
