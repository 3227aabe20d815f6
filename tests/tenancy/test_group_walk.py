"""The walk by groups (``tenancy/groups.py``) decides what the job-by-job walk decides: on
random contended workloads the schedule, the tenant audit (pending-reason changes, evictions,
flavors, never-admitted jobs) and every cycle's pending book (each job's queue, reason and
position; the detail text of a skipped job names the failure that told it) are those of the
same run with the walk turned off. A walk that skipped a job that could have started,
or that skipped a job whose reasons would have changed, fails here."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from harness import assert_same_books, cohort_yaml

from dlsched.cluster.cluster import Cluster, Node
from dlsched.policies.backfill import backfill
from dlsched.policies.edf import edf
from dlsched.policies.fifo import fifo
from dlsched.policies.sjf import sjf, srtf
from dlsched.policies.tiresias import tiresias
from dlsched.scheduling.profile import Profile
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.groups import GroupWalk
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import Job, JobSpec
from dlsched.workload.trace import Trace


def _config(tight: bool, strict_queue: bool) -> str:
    return cohort_yaml((8, 4, 8, 0) if tight else (16, 8, 16, 0),  # 16 GPUs in all
                       1 if strict_queue else None)


def _trace(seed: int, jobs: int, short: float = 0.0) -> Trace:
    """``short``: the share of jobs that run 5-60 s (some end before the next cycle)."""
    rng, late = random.Random(seed), random.Random(-seed)
    specs, now = [], 0.0
    for i in range(jobs):
        now += rng.expovariate(1 / 40.0)
        duration = rng.uniform(200, 4000)
        if short and late.random() < short:
            duration = late.uniform(5.0, 60.0)
        specs.append(JobSpec(f"j{i}", round(now, 1), rng.choice((1, 1, 1, 2, 2, 4, 8)),
                             duration,
                             queue=rng.choice(("q0", "q1", "q2", "q3", "team-x")),
                             priority=rng.choice((0, 0, 0, 1)),
                             deadline=round(now + duration * late.uniform(1.2, 6.0), 1)))
    return Trace("random", tuple(specs))


def _once(walk: Any) -> Iterator[Job]:
    """The walk's jobs, each once in a cycle (a job the walk gave twice fails here)."""
    seen: set[str] = set()
    for job in _WALK(walk):
        assert job.job_id not in seen, f"{job.job_id} given twice in one cycle"
        seen.add(job.job_id)
        yield job


_WALK = GroupWalk.__iter__


def _run(policy: Profile, text: str, trace: Trace, by_groups: bool
         ) -> tuple[list[Any], Any, list[dict[str, Any]], int]:
    GroupWalk.__iter__ = _once  # type: ignore[method-assign]
    try:
        return _run_once(policy, text, trace, by_groups)
    finally:
        GroupWalk.__iter__ = _WALK  # type: ignore[method-assign]


def _run_once(policy: Profile, text: str, trace: Trace, by_groups: bool
              ) -> tuple[list[Any], Any, list[dict[str, Any]], int]:
    profile = with_tenants(policy, parse_tenants(text))
    admission = profile.queue_sort
    assert isinstance(admission, TenantAdmission) and admission.by_groups
    admission.by_groups = by_groups
    cluster = Cluster("t", tuple(Node(f"n{i}", "V100", 4) for i in range(4)))
    sim = Simulator(cluster, trace, profile, SimConfig())
    plugin = sim.core.profile.queue_sort
    books: list[dict[str, Any]] = []
    skipped = 0
    original = sim.core.cycle

    def cycle() -> Any:
        nonlocal skipped
        result = original()
        book = plugin.pending
        history = dict(plugin.history.values) if plugin.history is not None else {}
        pending: dict[str, Any] = {job_id: (p.cluster_queue, p.reason, p.position)
                                   for job_id in sorted(book) if (p := book[job_id])}
        pending[" queues"] = dict(sim.core.queue_reasons)  # why the rest of a queue waits
        books.append((sim.clock.time, pending, history))
        if by_groups and book.bulk is not None:
            skipped += sum(1 for job_id in book if job_id not in book.recorded
                           and book.bulk(job_id) is not None)
        return result

    sim.core.cycle = cycle  # type: ignore[method-assign]
    result = sim.run()
    audit = plugin.audit
    return (sorted(map(repr, result.jobs)),
            (audit.pending, audit.evictions, audit.flavors, audit.never), books, skipped)


def _as_job_by_job(policy: str, text: str, trace: Trace,
                   patches: tuple[tuple[Any, str, Any], ...] = ()
                   ) -> tuple[list[Any], list[Any]]:
    """Run ``policy`` walked by groups, with ``patches`` (owner, attribute, value) in place
    meanwhile, then job by job; assert the same schedule, audit and books; both books."""
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    try:
        jobs, audit, books, _ = _run(POLICIES[policy](), text, trace, by_groups=True)
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)
    want_jobs, want_audit, want_books, _ = _run(POLICIES[policy](), text, trace,
                                                by_groups=False)
    assert jobs == want_jobs
    assert audit == want_audit
    assert_same_books(books, want_books)
    return books, want_books


POLICIES: dict[str, Callable[[], Profile]] = {
    "fifo": lambda: fifo(strict=False), "sjf": sjf, "srtf": srtf, "edf": edf,
    "srtf-protected": lambda: srtf(min_runtime=900.0),
    "tiresias": lambda: tiresias(thresholds=(1200.0,)),
    "tiresias-promote": lambda: tiresias(thresholds=(600.0, 6000.0), promote_knob=1.0),
    "tiresias-same-queue": lambda: tiresias(thresholds=(1200.0,), same_queue_preemption=True),
    "backfill": backfill,
}


@pytest.mark.parametrize(("policy", "seed", "tight", "strict_queue"),
                         [("fifo", 0, False, False), ("fifo", 1, True, True),
                          ("sjf", 2, False, True), ("sjf", 3, True, False),
                          ("srtf", 4, False, False), ("srtf", 5, True, True),
                          ("srtf-protected", 6, True, False), ("edf", 7, False, False),
                          ("edf", 8, True, False), ("tiresias", 9, False, False),
                          ("tiresias", 10, True, False), ("tiresias-promote", 11, True, False),
                          ("tiresias-same-queue", 12, False, True),
                          ("backfill", 17, False, False), ("backfill", 18, True, True),
                          ("backfill", 19, True, False)])
def test_the_walk_by_groups_decides_as_the_walk_job_by_job(
        policy: str, seed: int, tight: bool, strict_queue: bool) -> None:
    """Backfill's walk waits for the cycle's reservation (its head must be tried); then it
    passes over a steady job that the reservation refuses at its turn (``walk_refuses``). For a
    preemptive policy (SRTF, EDF, Tiresias) the walk drops a group only after a job of its
    queue and priority failed its victim search too; the comparison then covers the
    policy's own evictions inside each queue."""
    make = POLICIES[policy]
    text, trace = _config(tight, strict_queue), _trace(seed, 80)
    jobs, audit, books, skipped = _run(make(), text, trace, by_groups=True)
    want_jobs, want_audit, want_books, _ = _run(make(), text, trace, by_groups=False)
    assert jobs == want_jobs
    assert audit == want_audit
    assert_same_books(books, want_books)
    assert skipped > 0  # the walk did skip jobs: the comparison is not vacuous


@pytest.mark.parametrize(("policy", "seed", "tight"),
                         [("srtf", 18, True), ("srtf", 13, False), ("edf", 13, True),
                          ("edf", 14, False), ("tiresias", 15, True),
                          ("tiresias-promote", 16, False), ("backfill", 20, True)])
def test_the_walk_with_jobs_that_end_before_the_next_cycle(policy: str, seed: int,
                                                           tight: bool) -> None:
    """A job that starts and ends between two cycles frees GPUs the next cycle may use: a
    failed victim search carried across cycles (``TenantAdmission.carried_miss``) must not
    outlive it."""
    text, trace = _config(tight, False), _trace(seed, 100, short=0.4)
    jobs, audit, books, skipped = _run(POLICIES[policy](), text, trace, by_groups=True)
    want_jobs, want_audit, want_books, _ = _run(POLICIES[policy](), text, trace,
                                                by_groups=False)
    assert jobs == want_jobs
    assert audit == want_audit
    assert_same_books(books, want_books)
    assert skipped > 0


@pytest.mark.parametrize(("policy", "seed", "short"),
                         [("srtf", 30, 0.0), ("srtf", 34, 0.4), ("edf", 30, 0.0),
                          ("edf", 31, 0.4), ("tiresias", 34, 0.0), ("tiresias", 37, 0.4)])
def test_a_miss_carried_across_stops_by_its_room(policy: str, seed: int, short: float) -> None:
    """After stops, a failed victim search still tells about later cycles when it failed for
    room and no more GPUs are wholly free than it could bear (``victims_short``), and only
    about the jobs ranked from the failed one on; so does a miss known before an eviction in
    the cycle. A carry that ignores the free GPUs or the candidates' GPUs, that skips the jobs
    ranked before the failed one, or that keeps a miss across an eviction without the bound,
    fails here."""
    text, trace = _config(False, False), _trace(seed, 100, short=short)
    admission: list[TenantAdmission] = []
    original = TenantAdmission.carried_miss

    def carried(self: TenantAdmission, *args: Any) -> Any:
        found = original(self, *args)
        if found is not None and found[1] is not None:
            admission.append(self)
        return found

    TenantAdmission.carried_miss = carried  # type: ignore[method-assign]
    try:
        jobs, audit, books, _ = _run(POLICIES[policy](), text, trace, by_groups=True)
    finally:
        TenantAdmission.carried_miss = original  # type: ignore[method-assign]
    want_jobs, want_audit, want_books, _ = _run(POLICIES[policy](), text, trace,
                                                by_groups=False)
    assert jobs == want_jobs
    assert audit == want_audit
    assert_same_books(books, want_books)
    assert admission  # some group was skipped from a position by a room-bound carry


@pytest.mark.parametrize(("policy", "seed"), [("tiresias", 40), ("tiresias", 41),
                                              ("srtf", 42)])
def test_misses_kept_per_gpu_count_and_demotions_per_queue(policy: str, seed: int) -> None:
    """A kept miss is kept per GPU count (one of more GPUs does not replace one of fewer,
    which still tells about the groups asking between), and Tiresias' victims epoch is its
    demotions in the group's own queue (a job's victims are of its queue), so a miss outlives
    demotions elsewhere. The schedule, audit and books stay the job-by-job walk's, and both
    rules are used. A miss used for a group asking fewer GPUs, or one kept across a demotion
    in its own queue, fails here."""
    text, trace = _config(True, False), _trace(seed, 120)
    made: dict[int, tuple[Any, int]] = {}  # id of a kept miss -> it, Tiresias' demotions
    # in all queues when it was made
    used = {"sizes": 0, "elsewhere": 0}
    missed, carried_miss = TenantAdmission._missed, TenantAdmission.carried_miss

    def demotions(self: TenantAdmission) -> int:
        return sum(getattr(epoch.__self__, "_demotion_count", 0)  # type: ignore[attr-defined]
                   for epoch in self.victim_epochs)

    def record(self: TenantAdmission, *args: Any) -> None:
        missed(self, *args)
        for kept in self.groups.carry.values():
            for known in kept.values():
                made.setdefault(id(known), (known, demotions(self)))

    def carried(self: TenantAdmission, state: Any, data: Any, group: Any) -> Any:
        found = carried_miss(self, state, data, group)
        kept = self.groups.carry.get(group.carry_key) or {}
        if found is not None:
            used["sizes"] += len(kept) > 1
            now = demotions(self)
            used["elsewhere"] += any(made[id(k)][1] != now for gpus, k in kept.items()
                                     if gpus <= group.num_gpus)
        return found

    _as_job_by_job(policy, text, trace, ((TenantAdmission, "_missed", record),
                                         (TenantAdmission, "carried_miss", carried)))
    assert used["sizes"] > 0
    if policy == "tiresias":
        assert used["elsewhere"] > 0


@pytest.mark.parametrize(("policy", "seed", "short"),
                         [("srtf", 57, 0.0), ("srtf", 52, 0.3), ("edf", 52, 0.0),
                          ("tiresias", 51, 0.3), ("sjf", 54, 0.0), ("fifo", 55, 0.3),
                          ("backfill", 56, 0.0)])
def test_a_quiet_cycle_asks_no_wake_up_for_protection_ends(policy: str, seed: int,
                                                           short: float) -> None:
    """A cycle that changed nothing, where no job needed its quota by preemption (the only
    use of a minimum runtime), asks no wake-up for the ends of protection: until a job
    arrives, starts or stops, such a cycle would change nothing either. The schedule, the
    audit, every book and the fair-sharing history stay those of the run that wakes for
    each end, and cycles are left out (not under backfill, whose shadow time moves with the
    clock). A cycle left out after one that started or evicted a job (the next may evict
    the job started), or a history not advanced through the cycles left out, fails here."""
    books, want_books = _as_job_by_job(policy, _config(True, False),
                                       _trace(seed, 120, short=short))
    if policy == "backfill":
        assert len(books) == len(want_books)
    else:
        assert len(books) < len(want_books)


@pytest.mark.parametrize(("policy", "seed"), [("edf", 60), ("srtf", 61), ("tiresias", 62)])
def test_a_room_bound_checked_at_the_groups_turn(policy: str, seed: int) -> None:
    """A miss whose room bound does not hold as the walk starts (a job stopped: more GPUs
    are wholly free) may hold at its group's turn, once jobs started before it took them
    (``Carried.lazy``, checked in ``GroupWalk._miss``); the group is then dropped from the
    failed job on. The decisions stay the job-by-job walk's, and such drops happen. A bound
    not checked again at the turn fails here."""
    text, trace = _config(False, False), _trace(seed, 120, short=0.3)
    lazy: dict[int, Any] = {}  # id -> the group (kept: an id is not reused meanwhile)
    drops = 0
    carried_miss, drop = TenantAdmission.carried_miss, GroupWalk._drop

    def carried(self: TenantAdmission, state: Any, data: Any, group: Any) -> Any:
        found = carried_miss(self, state, data, group)
        if found is not None and found.lazy:
            lazy[id(group)] = group
        return found

    def dropped(self: GroupWalk, group: Any, index: int, detail: str) -> None:
        nonlocal drops
        known = self.carried_from.get(group)
        drops += id(group) in lazy and known is not None and known[1] == detail
        drop(self, group, index, detail)

    _as_job_by_job(policy, text, trace, ((TenantAdmission, "carried_miss", carried),
                                         (GroupWalk, "_drop", dropped)))
    assert drops > 0
