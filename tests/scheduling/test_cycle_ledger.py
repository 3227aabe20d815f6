"""The allocation cycle's ``_Ledger``: GPUs given back and taken on Python lists, booked as
``CycleState`` books them."""

from __future__ import annotations

import random

import numpy as np
import pytest
from builders import FixedTargets, make_cluster, make_job, running_job, snapshot_of

from dlsched.scheduling.allocation_cycle import _Ledger, run_allocation_cycle
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


def test_a_round_of_moves_books_no_gpu_through_the_state(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """Moves, a preemption and a start: the cycle gives back and takes every GPU on its
    ledger (no ``CycleState.evict``/``take`` per job), and the decisions are as before."""
    cluster = make_cluster(nodes=2, gpus=2)
    a, b, c = running_job("A", (0,)), running_job("B", (2,)), running_job("C", (3,))
    w = Job(make_job("W").build())

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("booked through CycleState")

    for name in ("take", "evict", "give_back"):
        monkeypatch.setattr(CycleState, name, refuse)
    result = run_allocation_cycle(FixedTargets({"A": (1,), "B": (0,), "W": (0,)}),
                                  snapshot_of(cluster, [a, b, c], [w]))
    assert [(r.job_id, r.gpus) for r in result.resizes] == [("A", (2,)), ("B", (0,))]
    assert [p.job_id for p in result.preemptions] == ["C"]
    assert [(s.job_id, s.gpus) for s in result.starts] == [("W", (1,))]


@pytest.mark.parametrize("seed", range(5))
def test_ledger_books_as_the_state_does(seed: int) -> None:
    """Fractional and whole shares given back and taken in a random order: the ledger's
    arrays, once synced, and its whole-free count equal ``CycleState``'s, float for float."""
    rng = random.Random(seed)
    cluster = make_cluster(nodes=3, gpus=4)
    held: list[Job] = []
    for i, gpu in enumerate(rng.sample(range(12), 8)):
        job = running_job(f"j{i}", (gpu,))
        job.shares = (rng.choice([0.25, 0.3, 0.5, 1.0]),)
        held.append(job)
    snapshot = snapshot_of(cluster, [], [])
    free = np.ones(12)
    for job in held:
        free[job.allocation[0]] -= job.shares[0]
    snapshot = snapshot.__class__(**{**snapshot.__dict__, "free": free,
                                     "node_free": (free.reshape(3, 4) >= 1 - 1e-9).sum(1)})
    direct, listed = CycleState.begin(snapshot), CycleState.begin(snapshot)
    assert direct.free_whole == listed.free_whole  # the base read before the changes
    ledger = _Ledger(listed)
    for step in range(20):
        if step % 3 == 0 and held:
            job = held.pop(rng.randrange(len(held)))
            direct.evict(job)
            ledger.evict(job)
        else:
            gpu, share = rng.randrange(12), rng.choice([0.1, 0.25, 0.5, 1.0])
            direct.take((gpu,), share)
            ledger.take((gpu,), share)
        if step % 7 == 6:
            ledger.sync()
    ledger.sync()
    assert direct.free.tolist() == listed.free.tolist()
    assert direct.node_free.tolist() == listed.node_free.tolist()
    assert direct.free_whole == listed.free_whole
    assert set(direct.evicted) == set(listed.evicted)


def test_one_worker_moves_are_taken_on_the_ledger_itself(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """A move of one worker is picked and taken by ``_Ledger.moves`` (no ``_take`` call per
    move); a gang on two nodes still goes through ``_take``, on the same lists. The GPUs are
    the ones ``_take`` picks: a held GPU on the target node first, else the node's first."""
    from dlsched.scheduling import allocation_cycle

    cluster = make_cluster(nodes=3, gpus=2)
    a, b = running_job("A", (0,)), running_job("B", (2,))
    g = running_job("G", (4, 5))
    take, gangs = allocation_cycle._take, []

    def gangs_only(name, state, job, target, held, books=None):  # type: ignore[no-untyped-def]
        assert len(target.nodes) > 1
        gangs.append(job.job_id)
        return take(name, state, job, target, held, books)

    monkeypatch.setattr(allocation_cycle, "_take", gangs_only)
    result = run_allocation_cycle(FixedTargets({"A": (1,), "B": (0,), "G": (0, 2)}),
                                  snapshot_of(cluster, [a, b, g], []))
    assert [(r.job_id, r.gpus) for r in result.resizes] == [("A", (2,)), ("B", (0,)),
                                                            ("G", (1, 4))]
    assert gangs == ["G"]


def test_evictions_are_booked_once_after_the_running_jobs(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Without reasons to ask between them, the cycle books every eviction in one
    ``evict_all`` (running order), not job by job."""
    calls: list[list[str]] = []
    evict_all = _Ledger.evict_all

    def once(self: _Ledger, jobs: list[Job]) -> None:
        calls.append([job.job_id for job in jobs])
        evict_all(self, jobs)

    def refuse(self: _Ledger, job: Job) -> None:
        raise AssertionError("evicted job by job")

    monkeypatch.setattr(_Ledger, "evict_all", once)
    monkeypatch.setattr(_Ledger, "evict", refuse)
    cluster = make_cluster(nodes=2, gpus=2)
    a, b, c = running_job("A", (0,)), running_job("B", (2,)), running_job("C", (3,))
    result = run_allocation_cycle(FixedTargets({"A": (1,), "B": (0,)}),
                                  snapshot_of(cluster, [a, b, c], []))
    assert calls == [["A", "B", "C"]]
    assert [(r.job_id, r.gpus) for r in result.resizes] == [("A", (2,)), ("B", (0,))]
