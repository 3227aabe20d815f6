"""Victims per cluster queue under tenants (``victim_scope``): a wrapped policy that keeps its
running jobs per cluster queue (SRTF's and EDF's preemption indexes, Tiresias' queues) chooses
the victims that filtering its whole ranking by the preemptor's cluster queue chooses; and a
failed victim search tells that a later job of its queue, flavor, priority and shape asking no
fewer GPUs finds none either (``victim_miss_scope``: that job's search is not made). On
random contended workloads the schedule, the tenant audit and every cycle's pending book are
those of the same run with the filter over the whole ranking. An index that missed a victim,
offered one of another queue, or offered them in another order, or a skipped search that would
have found victims (or left another reason), fails here; so does a scope without the
priority (jobs are drawn with two priorities)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from harness import assert_same_books, cohort_yaml

from dlsched.cluster.cluster import Cluster, Node
from dlsched.policies.edf import edf
from dlsched.policies.sjf import srtf
from dlsched.policies.tiresias import tiresias
from dlsched.scheduling import cycle as cycle_module
from dlsched.scheduling.plugins.preemption import Preemption
from dlsched.scheduling.profile import Profile
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import QueueScope, _Stripped, with_tenants
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace


def _config(tight: bool) -> str:
    return cohort_yaml((8, 4, 8, 0) if tight else (16, 16, 16, 8))  # 16 GPUs in all


def _trace(seed: int, jobs: int) -> Trace:
    rng = random.Random(seed)
    specs, now = [], 0.0
    for i in range(jobs):
        now += rng.expovariate(1 / 30.0)
        duration = rng.uniform(200, 4000)
        specs.append(JobSpec(f"j{i}", round(now, 1), rng.choice((1, 1, 1, 2, 2, 4, 8)),
                             duration,
                             queue=rng.choice(("q0", "q1", "q2", "q3", "team-x", "nowhere")),
                             deadline=round(now + duration * rng.uniform(1.2, 6.0), 1),
                             priority=rng.choice((0, 0, 1))))
    return Trace("random", tuple(specs))


def _unscoped(profile: Profile) -> None:
    """The run's plugins as before scopes: one ranking for all, filtered by cluster queue, and
    every victim search made."""
    admission = profile.queue_sort
    assert isinstance(admission, TenantAdmission) and admission.scoped_victims
    admission.scoped_victims = False
    for plugin in profile.post_filters:
        if isinstance(plugin, _Stripped):
            assert isinstance(plugin.inner.victim_scope, QueueScope)
            plugin.inner.victim_scope = None
            plugin.post_filter = plugin._same_queue_victims


def _run(policy: Profile, text: str, trace: Trace, scoped: bool
         ) -> tuple[list[Any], Any, list[dict[str, Any]], int]:
    profile = with_tenants(policy, parse_tenants(text))
    cluster = Cluster("t", tuple(Node(f"n{i}", "V100", 4) for i in range(4)))
    sim = Simulator(cluster, trace, profile, SimConfig())
    if not scoped:
        _unscoped(sim.core.profile)
    plugin = sim.core.profile.queue_sort
    books: list[Any] = []
    original = sim.core.cycle

    def cycle() -> Any:
        result = original()
        book = plugin.pending
        history = dict(plugin.history.values) if plugin.history is not None else {}
        books.append((sim.clock.time, {job_id: (p.cluster_queue, p.reason, p.position, p.detail)
                                       for job_id in sorted(book) if (p := book[job_id])},
                      history))
        return result

    sim.core.cycle = cycle  # type: ignore[method-assign]
    searches = 0
    search = cycle_module._fewest_victims

    def counted(*args: Any) -> Any:
        nonlocal searches
        searches += 1
        return search(*args)

    cycle_module._fewest_victims = counted  # type: ignore[assignment]
    try:
        result = sim.run()
    finally:
        cycle_module._fewest_victims = search  # type: ignore[assignment]
    audit = plugin.audit
    evictions = sum(job.preemptions for job in result.jobs)
    return (sorted(map(repr, result.jobs)),
            (audit.pending, audit.evictions, audit.flavors, audit.never), books,
            (evictions, searches))


def _srtf_sorted_per_cycle() -> Profile:
    """SRTF whose preemption ranks the running jobs afresh each cycle (no index)."""
    profile = srtf()
    for plugin in profile.plugins:
        if isinstance(plugin, Preemption):
            plugin._index = plugin._kind = None
    return profile


_COUNTS = re.compile(r"needs \d+ GPUs?, (\d+|none) free")


def _assert_same_books(books: list[Any], want: list[Any]) -> None:
    """Every cycle's pending book (counts masked) and fair-sharing history of the scoped run
    are the unscoped run's at the same time. The scoped run may leave out cycles: after a quiet
    cycle Tiresias wakes for no demotion of a queue where no job waits above the last queue
    (``DiscretizedLas.next_wakeup``; unscoped, every demotion may give any queue a victim).
    A cycle left out changed no book, and the next cycle's history holds the same values, to
    the bit (``TenantAdmission._replay_quiet``)."""
    assert_same_books(_counts_masked(books), _counts_masked(want))


def _counts_masked(books: list[Any]) -> list[Any]:
    """The books with the GPU counts of placement details masked. A job that a failed search
    of an earlier cycle passes over is told that search's detail (``Carried.detail``): its
    counts are those of that cycle. Tiresias keeps its demotions per scope, so a search kept
    across a demotion in another queue is carried with its scope, not without (a
    ``victims_epoch`` per queue): a detail may then be that of an earlier cycle."""
    return [(time, {job: (*entry[:3], _COUNTS.sub("needs N GPUs, N free", entry[3]))
                    for job, entry in book.items()}, history)
            for time, book, history in books]


POLICIES: dict[str, Callable[[], Profile]] = {
    "srtf": srtf,
    "srtf-sorted": _srtf_sorted_per_cycle,
    "tiresias": lambda: tiresias(thresholds=(1200.0,)),
    "tiresias-same-queue": lambda: tiresias(thresholds=(600.0, 6000.0),
                                            same_queue_preemption=True),
    "edf": edf,
}


@pytest.mark.parametrize(("policy", "seed", "tight"),
                         [("srtf", 0, False), ("srtf", 1, True), ("srtf-sorted", 2, False),
                          ("tiresias", 3, False), ("tiresias", 4, True),
                          ("tiresias-same-queue", 5, False), ("edf", 6, False)])
def test_victims_per_queue_are_those_of_the_whole_ranking_filtered(
        policy: str, seed: int, tight: bool) -> None:
    text, trace = _config(tight), _trace(seed, 90)
    jobs, audit, books, (evictions, searches) = _run(POLICIES[policy](), text, trace,
                                                     scoped=True)
    want_jobs, want_audit, want_books, (_, every) = _run(POLICIES[policy](), text, trace,
                                                          scoped=False)
    assert jobs == want_jobs
    assert audit == want_audit
    _assert_same_books(books, want_books)
    # The policy's own preemption ran and failed searches told about later jobs: the
    # comparison is not vacuous.
    assert evictions > 0 and searches < every
