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


def test_a_moved_worker_takes_the_first_node_with_one_gpu_left_without_reading_further(
        ) -> None:
    # Nine 4-GPU nodes of one type with 4, 2, 1, 1, ... GPUs left: one worker moving there
    # goes to the tightest node, the first of equals (node 2), found at the third node.
    room = _Room([4, 2, 1, 1, 1, 1, 1, 1, 1])
    _CountingList.reads = 0
    placed = place_round({"j": 0}, {"j": 1}, {}, np.zeros(9, dtype=np.int64), room)
    assert placed == {"j": (2,)}
    assert room.values == [4, 2, 0, 1, 1, 1, 1, 1, 1]
    assert _CountingList.reads <= 4  # three nodes looked at, one taken (not all nine)


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
    assert sorted(set(asked)) == (["attained", "remaining"] if reads else [])
