"""What a Gavel round pays per job it moves (issue 13's speed item): the heterogeneity-agnostic
rounds move ~74% of the running jobs each round (Gavel's own simulator ~81%), so each step the
allocation cycle and the policy take per moved job counts ~25,000 times at 1,000 jobs."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job
from gavel_cases import artifact_sim

from dlsched.policies.gavel import artifact_rounds
from dlsched.policies.gavel.assign import place_round
from dlsched.scheduling.plugins.filters import allows_every_node
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.job import Job
from dlsched.workload.readers.base import ReaderOptions


@pytest.mark.parametrize("pools", [None, ["a", "b"]], ids=["no-pools", "pools"])
def test_allows_every_node_runs_no_import_statement(pools: list[str] | None,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # A function-level import costs ~35 plain calls even with the module loaded: the cycle
    # asks this for every job a round moves or starts (``allocation_cycle._outside``).
    state = cycle_state(make_cluster(nodes=2, gpus=2, pools=pools))
    job = Job(make_job("j").pool("a").build())
    expected = allows_every_node(state, job)
    imports: list[str] = []
    real = builtins.__import__

    def counting(name: str, *args: object, **kwargs: object) -> object:
        imports.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", counting)
    assert allows_every_node(state, job) is expected
    assert imports == []
    assert expected is (pools is None)


class _CountingList(list):
    """A list that counts its item reads (``place_round``'s per-node room)."""

    reads = 0

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        _CountingList.reads += 1
        return super().__getitem__(index)


class _Room:
    """``place_round``'s ``room`` (it reads ``tolist()`` and writes the room back)."""

    def __init__(self, values: list[int]) -> None:
        self.values = values

    def tolist(self) -> list[int]:
        return _CountingList(self.values)

    def __setitem__(self, key: slice, value: list[int]) -> None:
        self.values[key] = list(value)


def test_a_moved_worker_takes_the_first_node_with_one_gpu_left() -> None:
    # Nine 4-GPU nodes of one type with 4, 2, 1, 1, ... GPUs left: one worker moving there
    # goes to the tightest node, the first of equals (node 2).
    room = _Room([4, 2, 1, 1, 1, 1, 1, 1, 1])
    placed = place_round({"j": 0}, {"j": 1}, {}, np.zeros(9, dtype=np.int64), room)
    assert placed == {"j": (2,)}
    assert room.values == [4, 2, 0, 1, 1, 1, 1, 1, 1]


def test_one_worker_moves_read_each_node_once_a_type_not_once_a_move() -> None:
    # Ten one-worker jobs moving onto nine nodes of one type: each node's room is read once
    # to order the type's nodes (tightest first), then once a move to take the GPU; a scan
    # for the tightest node per move read ~7 of the 9 each time.
    room = _Room([4, 2, 1, 1, 1, 1, 1, 1, 3])
    _CountingList.reads = 0
    jobs = {f"j{i}": 0 for i in range(10)}
    placed = place_round(jobs, dict.fromkeys(jobs, 1), {}, np.zeros(9, dtype=np.int64), room)
    assert [placed[f"j{i}"] for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)] == [
        (2,), (3,), (4,), (5,), (6,), (7,), (1,), (1,), (8,), (8,)]
    assert _CountingList.reads <= 9 + 10


def _scan_reference(types, current, kinds, room):
    """The tightest-node scan per move (``place_round`` before its fill order)."""
    left, placed, moving = list(room), {}, []
    for job_id, kind in types.items():
        held = current.get(job_id)
        if held is not None and kinds[held[0]] == kind and left[held[0]] >= 1:
            left[held[0]] -= 1
            placed[job_id] = held
        else:
            moving.append(job_id)
    for job_id in sorted(moving):
        best = -1
        for node, k in enumerate(kinds):
            if k == types[job_id] and left[node] >= 1 and (best < 0 or left[node] < left[best]):
                best = node
        if best >= 0:
            left[best] -= 1
            placed[job_id] = (best,)
    return placed, left


@pytest.mark.parametrize("seed", range(30))
def test_one_worker_moves_go_where_the_scan_puts_them(seed: int) -> None:
    rng = np.random.default_rng(seed)
    kinds = rng.integers(0, 3, 12)
    room = rng.integers(0, 5, 12)
    types = {f"j{i}": int(rng.integers(0, 3)) for i in range(int(rng.integers(1, 40)))}
    current = {job_id: (int(rng.integers(0, 12)),) for job_id in types if rng.random() < 0.5}
    expected, left = _scan_reference(types, current, kinds.tolist(), room.tolist())
    placed = place_round(types, dict.fromkeys(types, 1), current, kinds, room)
    assert placed == expected and room.tolist() == left


def test_current_nodes_of_one_worker_jobs_are_not_sorted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``_current_nodes`` reads the nodes of every job the journal names (~25,000 moves in
    # the agnostic run at 1,000 jobs): a one-worker job's node needs no list to sort.
    sorted_lists: list[int] = []

    def counting(values, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(values, list) and values and isinstance(values[0], int):
            sorted_lists.append(len(values))
        return builtins.sorted(values, *args, **kwargs)

    monkeypatch.setattr(artifact_rounds, "sorted", counting, raising=False)
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=30))
    sim = artifact_sim("gavel-maxmin-agnostic", trace)
    sim.run()
    assert 1 not in sorted_lists


@pytest.mark.parametrize(("policy", "reads"), [
    ("gavel-fifo", False), ("gavel-maxmin", False), ("gavel-maxmin-agnostic", False),
    ("gavel-las", True), ("gavel-ftf", True),
])
def test_a_reset_reads_each_job_s_progress_only_for_objectives_that_use_it(
        policy: str, reads: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # FIFO and max-min read throughputs, scales and weights alone: each job's remaining work
    # (a settle of its progress) and attained service at every allocation reset were ~5% of
    # FIFO's 1,000-job run; LAS reads the attained service, FTF the remaining work
    from dlsched.policies.gavel_round import GavelRounds

    asked: list[str] = []
    built, remaining, attained = GavelRounds._problem, Job.remaining_work, Job.attained_service
    building = [False]

    def problem(self, state, jobs):  # type: ignore[no-untyped-def]
        building[0] = True
        try:
            return built(self, state, jobs)
        finally:
            building[0] = False

    def noted(name, method):  # type: ignore[no-untyped-def]
        def read(job, now):  # type: ignore[no-untyped-def]
            if building[0]:
                asked.append(name)
            return method(job, now)
        return read

    monkeypatch.setattr(GavelRounds, "_problem", problem)
    monkeypatch.setattr(Job, "remaining_work", noted("remaining", remaining))
    monkeypatch.setattr(Job, "attained_service", noted("attained", attained))
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=20))
    sim = artifact_sim(policy, trace)
    assert len(sim.run().jobs) == 20
    # (LAS reads the attained service alone: its remaining work is no term of its LP)
    expected = ["attained"] if policy == "gavel-las" else ["attained", "remaining"]
    assert sorted(set(asked)) == (expected if reads else [])


def test_rounds_moving_gangs_and_single_gpus_apply_as_each_halt_and_launch(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``Scheduler._move_one_gpu`` works one-GPU moves out inline and sends a gang's (2, 4 or
    # 8 GPUs) through ``_halt`` and ``_launch`` in its place: the same run as those alone.
    import dataclasses

    from gavel_cases import gavel_specs

    from dlsched.scheduling.scheduler import Scheduler
    from dlsched.workload.trace import Trace

    specs = [dataclasses.replace(spec, submit_time=120.0 * i, work=spec.work / 20)
             for i, spec in enumerate(gavel_specs(40, 3))]
    trace = Trace("gangs", tuple(specs), throughput="gavel")
    halts: list[int] = []
    halt = Scheduler._halt

    def counted(self, job, now):  # type: ignore[no-untyped-def]
        halts.append(len(job.allocation))
        halt(self, job, now)

    def run() -> list[tuple[object, ...]]:
        sim = artifact_sim("gavel-maxmin-agnostic", trace)
        result = sim.run()
        return [dataclasses.astuple(r) for r in result.jobs] + [
            tuple(map(tuple, sim.core.segments.columns())), (sim.core.used_gpus,)]

    monkeypatch.setattr(Scheduler, "_halt", counted)
    mixed = run()
    assert halts and all(size > 1 for size in halts)  # gangs only, one-GPU moves inline
    monkeypatch.setattr(Scheduler, "_two_pass_moves", lambda self: False)
    halts.clear()
    assert run() == mixed
    assert 1 in halts
