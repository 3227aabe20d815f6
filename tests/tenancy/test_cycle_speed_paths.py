"""The part-2 speed paths keep the semantics: the ledger kept across cycles equals a rebuild,
a failed job closes its queue only when no later job of it could do better, and the jobs it
closes still get a reason and a position."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from builders import cycle_state, make_cluster
from harness import LAST_PENDING, R, W, config_yaml, cq, expect, run_scenario, without_types

from dlsched.scheduling.journal import RunningJournal
from dlsched.tenancy.config import BorrowWithinCohort, ClusterQueue, Preemption, WithinQueue
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.quota import QuotaTree, Usage
from dlsched.tenancy.reasons import Reason
from dlsched.tenancy.skip import closes_queue
from dlsched.tenancy.view import FlavorNodes, Ledger
from dlsched.workload.job import Job, JobSpec, JobStatus

NEED = Reason.NEEDS_PREEMPTION
CONFIG = parse_tenants(config_yaml([cq("a", 8), cq("b", 8)]))


def _running(job_id: str, queue: str, gpus: tuple[int, ...]) -> Job:
    job = Job(JobSpec(job_id, 0.0, len(gpus), 1e6, queue=queue))
    job.status, job.allocation, job.shares = JobStatus.RUNNING, gpus, (1.0,) * len(gpus)
    job.run_started = 0.0
    return job


def test_the_ledger_kept_across_cycles_equals_a_rebuild_every_cycle() -> None:
    rng = random.Random(7)
    cluster = make_cluster(nodes=4, gpus=4)
    tree, flavors = QuotaTree(CONFIG), FlavorNodes(CONFIG)
    kept = Ledger(CONFIG, tree, flavors)
    running: dict[str, Job] = {}
    for step in range(60):
        for job_id in rng.sample(sorted(running), k=min(len(running), rng.randint(0, 2))):
            del running[job_id]  # finished or evicted
        used = {g for j in running.values() for g in j.allocation}
        free = [g for g in range(cluster.num_gpus) if g not in used]
        if free and rng.random() < 0.7:
            gpus = tuple(free[:rng.randint(1, min(4, len(free)))])
            running[f"j{step}"] = _running(f"j{step}", rng.choice("ab"), gpus)
        if running and rng.random() < 0.2:  # a job resized onto other GPUs
            job_id = rng.choice(sorted(running))
            running[job_id] = replace(running[job_id], allocation=running[job_id].allocation[:1])
        state = cycle_state(cluster, running=running.values())
        kept.update(state)
        fresh = Ledger(CONFIG, tree, flavors)
        fresh.update(state)
        assert _clean(kept.usage) == _clean(fresh.usage), step
        assert set(kept.admitted) == set(running)


def _clean(usage: Usage) -> dict:
    return {k: {fr: round(v, 9) for fr, v in used.items() if abs(v) > 1e-9}
            for k, used in usage.used.items()}


A = CONFIG.cluster_queues["a"]
TWO_FLAVORS = replace(A, flavors=("f", "g"),
                      quotas={**A.quotas, ("g", "gpu"): A.quotas[("f", "gpu")]})
BORROW = replace(A, preemption=Preemption(
    borrow_within_cohort=BorrowWithinCohort(enabled=True)))
NEWER = replace(A, preemption=Preemption(
    within_cluster_queue=WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY))


@pytest.mark.parametrize(("cq", "gpus", "types", "reason", "least", "evicted", "fifo", "want"), [
    (A, 1, (), NEED, 1, False, True, True),            # the least job failed: all later fail
    (A, 2, (), NEED, 1, False, True, False),           # a later 1-GPU job may still fit
    (A, 1, (), Reason.NO_NODE_FITS, 1, False, True, False),  # nodes, not quota
    (A, 1, (), Reason.STRICT_FIFO, 1, False, True, False),
    (A, 1, ("V100",), NEED, 1, False, True, False),    # a later job may use another flavor
    (TWO_FLAVORS, 1, (), NEED, 1, False, True, False),  # a larger job may fit another flavor
    (A, 1, (), NEED, 1, True, True, False),             # it had candidates taken away
    (BORROW, 1, (), NEED, 1, False, True, False),       # a later, borrowing job has more
    (NEWER, 1, (), NEED, 1, False, False, False),       # later may be older: more candidates
    (NEWER, 1, (), NEED, 1, False, True, True),         # FIFO: later is newer
], ids=["least-fails", "larger-fails", "node-reason", "strict-reason", "named-type",
        "two-flavors", "was-evicted", "borrow-within-cohort", "newer-not-fifo", "newer-fifo"])
def test_when_a_failed_job_closes_its_queue(cq: ClusterQueue, gpus: int, types: tuple,
                                            reason: Reason, least: int, evicted: bool,
                                            fifo: bool, want: bool) -> None:
    job = Job(JobSpec("x", 0.0, gpus, 10.0, queue="a", gpu_types=types))
    usage = Usage(QuotaTree(CONFIG))
    assert closes_queue(cq, job, {"gpu": float(gpus)}, reason, {"gpu": float(least)}, usage,
                        evicted, fifo) is want


def test_a_closed_queue_still_tells_each_job_why_and_where() -> None:
    # a uses its 8 and b lends nothing (b uses its 8 too): a1 (1 GPU, a's least) fails on
    # quota, so a2 and a3 are not tried, and get a1's reason with their own positions; b's own
    # head b9 is still tried (it fails on quota as well).
    text = config_yaml([cq("a", 8), cq("b", 8)])
    out = run_scenario(text, [R("a0", "a", 8), R("b0", "b", 8)],
                       [W("a1", "a", 1), W("a2", "a", 2, submit=1), W("a3", "a", 1, submit=2),
                        W("b9", "b", 1, submit=3)])
    assert without_types(out) == expect([], [], {"a1": NEED, "a2": NEED, "a3": NEED,
                                                 "b9": NEED})
    assert [LAST_PENDING[j].position for j in ("a1", "a2", "a3")] == [0, 1, 2]
    assert "a1, which asks no more" in LAST_PENDING["a3"].detail
    assert LAST_PENDING["b9"].detail == ""  # b9 was tried itself


def test_best_effort_fifo_still_tries_a_smaller_job_behind_a_failed_larger_one() -> None:
    text = config_yaml([cq("a", 8, cohort=None)])
    out = run_scenario(text, [R("a0", "a", 6)], [W("a1", "a", 4), W("a2", "a", 2, submit=1)])
    assert without_types(out) == expect(["a2"], [], {"a1": NEED})


def test_the_ledger_told_of_starts_equals_a_rebuild_and_tells_protection_ends() -> None:
    """``Ledger.told``: the update reads the core's running table (a dict's values view) by
    set differences and the starts Reserve told; usage, admitted jobs in order, the queues'
    GPU rates and the start times behind ``protection_ends`` equal a rebuild's; a start it
    was not told of falls back to the full pass. The core's ``running_changes`` (one more per
    launch, stop or re-rate) lets a cycle whose changes are only the told starts skip the set
    difference: those cycles, mixed with stops and re-rates, still equal a rebuild."""
    rng = random.Random(11)
    cluster = make_cluster(nodes=4, gpus=4)
    tree, flavors = QuotaTree(CONFIG), FlavorNodes(CONFIG)
    kept = Ledger(CONFIG, tree, flavors)
    kept.told = True
    table: dict[str, Job] = {}  # the core's running table
    changes = 0  # the core's ``running_changes``
    for step in range(80):
        for job_id in rng.sample(sorted(table), k=min(len(table), rng.choice((0, 0, 1, 2)))):
            del table[job_id]
            changes += 1
        if rng.random() < 0.1:
            changes += 1  # a re-rate: the table's jobs stay
        used = {g for j in table.values() for g in j.allocation}
        free = [g for g in range(cluster.num_gpus) if g not in used]
        if free and rng.random() < 0.7:
            job = _running(f"j{step}", rng.choice("abz"), tuple(free[:rng.randint(1, 3)]))
            job.run_started = float(step * 10 + rng.randint(0, 5))
            table[job.job_id] = job
            changes += 1
            if rng.random() < 0.9:  # a start told by Reserve; else found by the full pass
                kept.started(job.job_id)
        snapshot = cycle_state(cluster, now=step * 10.0).snapshot
        state = cycle_state(cluster, now=step * 10.0)
        object.__setattr__(state.snapshot, "running", table.values())
        object.__setattr__(state.snapshot, "running_changes", changes)
        kept.update(state)
        fresh = Ledger(CONFIG, tree, flavors)
        fresh.update(state)
        assert _clean(kept.usage) == _clean(fresh.usage), step
        assert list(kept.admitted) == [j for j in fresh.admitted], step
        assert kept.rates == {q: sum(a.request["gpu"] for a in fresh.admitted.values()
                                     if a.cq == q) for q in {a.cq for a in fresh.admitted.values()}}
        for runtime in (5.0, 30.0, 300.0):
            ends = [j.run_started + runtime for j in table.values()
                    if j.run_started + runtime > snapshot.now]
            assert kept.protection_ends(snapshot.now, runtime) == (min(ends) if ends else None)


class _Table(dict):
    """The core's running table, counting the key views taken (the ledger's set differences)."""

    differences = 0

    def keys(self):  # type: ignore[no-untyped-def]
        _Table.differences += 1
        return super().keys()


def test_the_ledger_reads_the_jobs_gone_from_the_cores_journal() -> None:
    """With the core's journal of running-job changes in the snapshot, the told update takes
    the jobs that left the table from the journal (no set difference over the running jobs),
    and equals a rebuild; a change the journal cannot name (a re-rating of many jobs) brings
    the set difference back for that update only."""
    rng = random.Random(5)
    cluster = make_cluster(nodes=4, gpus=4)
    tree, flavors = QuotaTree(CONFIG), FlavorNodes(CONFIG)
    kept = Ledger(CONFIG, tree, flavors)
    kept.told = True
    table = _Table()
    journal = RunningJournal(0)
    unknown_steps, differences, stop_steps = [], [], []
    for step in range(80):
        for job_id in rng.sample(sorted(table), k=min(len(table), rng.choice((0, 1, 1, 2)))):
            journal.note(table.pop(job_id))
            stop_steps.append(step)
        if rng.random() < 0.1:
            journal.note_unknown()
            unknown_steps.append(step)
        used = {g for j in table.values() for g in j.allocation}
        free = [g for g in range(cluster.num_gpus) if g not in used]
        if free and rng.random() < 0.7:
            job = _running(f"j{step}", rng.choice("abz"), tuple(free[:rng.randint(1, 3)]))
            job.run_started = float(step * 10)
            table[job.job_id] = job
            journal.note(job)
            kept.started(job.job_id)
        state = cycle_state(cluster, now=step * 10.0)
        object.__setattr__(state.snapshot, "running", table.values())
        object.__setattr__(state.snapshot, "running_changes", journal.count)
        object.__setattr__(state.snapshot, "journal", journal)
        before = _Table.differences
        kept.update(state)
        if _Table.differences != before:
            differences.append(step)
        fresh = Ledger(CONFIG, tree, flavors)
        fresh.update(state)
        assert _clean(kept.usage) == _clean(fresh.usage), step
        assert list(kept.admitted) == list(fresh.admitted), step
    assert unknown_steps and len(set(stop_steps) - set(unknown_steps)) > 20
    assert set(differences) <= set(unknown_steps) | {0}, (differences, unknown_steps)
