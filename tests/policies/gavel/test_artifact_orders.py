"""Gavel's simulator rounds (``mechanism=artifact``) keep their jobs' arrival order and their
moves' targets from round to round, as the same round would build them anew."""

from __future__ import annotations

import pytest
from builders import records_of
from gavel_cases import artifact_sim

from dlsched.policies.gavel import artifact_rounds
from dlsched.policies.gavel.artifact_rounds import _ARRIVAL, ArtifactGavelRounds
from dlsched.sim.simulator import Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.readers.base import ReaderOptions


def run(policy: str, jobs: int = 120) -> Simulator:
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=jobs))
    sim = artifact_sim(policy, trace)
    records_of(sim)
    return sim


@pytest.mark.parametrize("policy", ["gavel-maxmin-agnostic", "gavel-las", "gavel-fifo"])
def test_the_kept_arrival_order_is_the_sorted_one(policy: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Each cycle's order equals sorting every active job, and the run reads the sort key
    of fewer than half the jobs those sorts would (arrivals sorted alone; FIFO's rounds told
    settled leave the kept order behind: it sorts every job when it walks again)."""
    order, jobs_seen, keys_read = ArtifactGavelRounds._arrival_order, [], []

    def key(job):  # type: ignore[no-untyped-def]
        keys_read.append(1)
        return _ARRIVAL(job)

    def checked(self, running, waiting, active):  # type: ignore[no-untyped-def]
        jobs = order(self, running, waiting, active)
        assert jobs == sorted((*running, *waiting), key=_ARRIVAL)
        jobs_seen.append(len(jobs))
        return jobs

    monkeypatch.setattr(ArtifactGavelRounds, "_arrival_order", checked)
    monkeypatch.setattr(artifact_rounds, "_ARRIVAL", key)
    run(policy)
    assert len(jobs_seen) > 10
    if policy != "gavel-fifo":
        assert len(keys_read) < sum(jobs_seen) / 2


def test_a_move_reuses_the_target_of_its_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Agnostic max-min moves most running jobs every round: one ``Assignment`` per node
    tuple is built for the whole run, not one per move."""
    built, build = [], artifact_rounds._assignment

    def counting(nodes):  # type: ignore[no-untyped-def]
        built.append(nodes)
        return build(nodes)

    monkeypatch.setattr(artifact_rounds, "_assignment", counting)
    sim = run("gavel-maxmin-agnostic")
    moves = sum(record.resizes for record in records_of(sim).values())
    assert moves > 3 * len(built)
    assert len(built) == len(set(built))


@pytest.mark.parametrize("policy", ["gavel-maxmin-agnostic", "gavel-las", "gavel-fifo"])
def test_one_worker_walk_picks_as_the_gang_walk(policy: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # gavel-continuous-1000's jobs are all one GPU: ``_walk_one_worker`` reads no gang and
    # no budget per entry; the same types as the general loop
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=40))
    calls = []
    one_worker = artifact_rounds._walk_one_worker

    def counted(*args):  # type: ignore[no-untyped-def]
        calls.append(1)
        return one_worker(*args)

    monkeypatch.setattr(artifact_rounds, "_walk_one_worker", counted)
    fast = records_of(artifact_sim(policy, trace))
    assert calls
    needs = artifact_rounds._Rows.needs

    def general(self, workers):  # type: ignore[no-untyped-def]
        answer = needs(self, workers)
        self.one_worker = False
        return answer

    monkeypatch.setattr(artifact_rounds._Rows, "needs", general)
    calls.clear()
    assert records_of(artifact_sim(policy, trace)) == fast
    assert not calls


@pytest.mark.parametrize("policy", ["gavel-maxmin-agnostic", "gavel-las", "gavel-fifo"])
def test_the_walk_order_needs_no_row_number_key(policy: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # lexsort is stable: rows equal in priority, deficit and X stay in row (arrival) order,
    # the order the row number as a fourth key gave (that key cost a quarter of the sort)
    import numpy as np

    ranked_rows, seen = ArtifactGavelRounds._ranked_rows, []

    def checked(self, view, rows):  # type: ignore[no-untyped-def]
        ranked, keep = ranked_rows(self, view, rows)
        numbers = np.repeat(np.arange(len(rows.ids)), rows.x.shape[1]).reshape(rows.x.shape)
        assert not hasattr(rows, "arrival")
        assert (ranked == np.lexsort((numbers, rows.neg_x, rows.neg_deficit, -view.priority),
                                     axis=0)).all()
        seen.append(len(rows.ids))
        return ranked, keep

    monkeypatch.setattr(ArtifactGavelRounds, "_ranked_rows", checked)
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=40))
    records_of(artifact_sim(policy, trace))
    assert seen
