"""Kueue's rules as whole simulated runs: 2-6 jobs on one or two nodes of 4 GPUs, 2-3 cluster
queues, each case a golden table job -> (first start, finish, preemptions), worked by hand
(no restart overhead; a job's work is its run time on its GPUs). Each case names the rule and
its Kueue source; the one-cycle tables are in ``test_scenarios.py`` and
``test_kueue_rules.py``."""

from __future__ import annotations

from typing import Any

import pytest
from builders import cluster_of, make_cluster, records_of
from harness import config_yaml, cq

from dlsched.cluster.cluster import Cluster, Node
from dlsched.policies.fifo import fifo
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.tenancy.reasons import Reason
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

TWO_NODES = make_cluster(nodes=2, gpus=4)
ONE_NODE = make_cluster(nodes=1, gpus=4)
MIXED = cluster_of(Node("v0", "V100", 4), Node("x0", "A100", 4))
FLAVORS = [{"name": "v", "gpu_types": ["V100"]}, {"name": "x", "gpu_types": ["A100"]}]
RECLAIM_ANY = {"reclaim_within_cohort": "any"}
LOWER = {"within_cluster_queue": "lower-priority"}


def job(job_id: str, queue: str, submit: float, gpus: int, work: float,
        prio: int = 0) -> JobSpec:
    return JobSpec(job_id, submit, gpus, work, queue=queue, priority=prio)


def run(text: str, jobs: list[JobSpec], cluster: Cluster = TWO_NODES) -> tuple[dict, Any]:
    """Each job's (first start, finish, preemptions), and the run's tenant audit."""
    sim = Simulator(cluster, Trace("t", tuple(jobs)),
                    with_tenants(fifo(strict=False), parse_tenants(text)),
                    SimConfig(restart_overhead=0.0))
    records = records_of(sim)
    plugin = sim.profile.queue_sort
    assert isinstance(plugin, TenantAdmission)
    return ({k: (r.first_start, r.finish_time, r.preemptions) for k, r in records.items()},
            plugin.audit)


def test_a_reclaim_takes_the_job_that_borrowed_in_the_same_cycle() -> None:
    """Kueue scheduler.go: a preemption whose calculation another admission in the cohort
    invalidated in this cycle is skipped ("Workload skipped because its preemption
    calculations were invalidated by another workload") and tried again in the next cycle,
    where the newcomer is the newest candidate (candidates lower priority first, then the
    most recently admitted). b runs b1, b2 (priority 10) and b3 (its nominal 4); a0 ends at
    10. In that cycle b4 (team b, borrowing a's idle 4) is admitted first (a1, 8 GPUs, heads
    a and fails), then a2 (within a's nominal) reclaims: from b4, in a second cycle at 10,
    not from b1-b3, which b4 left running while they lost their 10 s (mean JCT 110.9 ->
    90.9 s). b4 borrows again when a2 ends at 60; a1 starts when it ends at 110."""
    text = config_yaml([cq("a", 4, preemption={**RECLAIM_ANY, **LOWER}),
                        cq("b", 4, preemption={**RECLAIM_ANY, **LOWER})])
    got, audit = run(text, [job("a0", "a", 0, 4, 10), job("b1", "b", 0, 1, 100, prio=10),
                            job("b2", "b", 0, 1, 100, prio=10), job("b3", "b", 0, 2, 100),
                            job("a1", "a", 1, 8, 50, prio=10), job("a2", "a", 1, 4, 50),
                            job("b4", "b", 2, 4, 50)])
    assert [(e.time, e.victim, e.preemptor) for e in audit.evictions] == [(10.0, "b4", "a2")]
    assert got == {"a0": (0.0, 10.0, 0), "b1": (0.0, 100.0, 0), "b2": (0.0, 100.0, 0),
                   "b3": (0.0, 100.0, 0), "a1": (110.0, 160.0, 0), "a2": (10.0, 60.0, 0),
                   "b4": (10.0, 110.0, 1)}
    assert (10.0, Reason.RECLAIM_DEFERRED) in [(p.time, p.reason) for p in audit.pending
                                               if p.job_id == "a2"]


def test_the_second_cycle_of_a_deferred_reclaim_keeps_its_own_wake_ups(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The case above with a 30 s minimum runtime in a: the first cycle at 10 defers a2's
    reclaim and asks a cycle at 10; the second must ask the next end of a minimum runtime
    (30: the running jobs' ends are looked at whatever their queue). It asked 10 again (a
    deferral was still on record for that time), which the simulator drops: the ends of
    protection were lost."""
    asked: list[tuple[float, float | None]] = []
    arm = Simulator._arm_wakeup

    def spy(self: Simulator, at: float | None) -> None:
        asked.append((self.clock.time, at))
        arm(self, at)

    monkeypatch.setattr(Simulator, "_arm_wakeup", spy)
    a = {**RECLAIM_ANY, **LOWER, "min_runtime": 30}
    text = config_yaml([cq("a", 4, preemption=a), cq("b", 4, preemption={**RECLAIM_ANY,
                                                                          **LOWER})])
    run(text, [job("a0", "a", 0, 4, 10), job("b1", "b", 0, 1, 100, prio=10),
               job("b2", "b", 0, 1, 100, prio=10), job("b3", "b", 0, 2, 100),
               job("a1", "a", 1, 8, 50, prio=10), job("a2", "a", 1, 4, 50),
               job("b4", "b", 2, 4, 50)])
    assert [at for now, at in asked if now == 10.0] == [10.0, 30.0]


THREE_OF_TWO = [job("a1", "a", 0, 2, 100), job("a2", "a", 0, 2, 100), job("a3", "a", 0, 2, 100)]


@pytest.mark.parametrize(("limit", "a3"), [(2, (100.0, 200.0, 0)), (4, (0.0, 100.0, 0))],
                         ids=["limit-2-waits", "limit-4-borrows"])
def test_borrowing_limit(limit: int, a3: tuple) -> None:
    """concepts/cluster_queue#borrowingLimit: a queue uses at most nominal + borrowingLimit.
    a (nominal 2) asks 3 x 2 GPUs, b (nominal 6) is idle: with limit 2, a3 (a at 6) waits for
    a1 to end; with limit 4 it borrows."""
    text = config_yaml([cq("a", {"nominal": 2, "borrowing_limit": limit}), cq("b", 6)])
    got, _ = run(text, THREE_OF_TWO)
    assert got == {"a1": (0.0, 100.0, 0), "a2": (0.0, 100.0, 0), "a3": a3}


@pytest.mark.parametrize(("limit", "a3"), [(2, (100.0, 200.0, 0)), (4, (0.0, 100.0, 0))],
                         ids=["lends-2", "lends-4"])
def test_lending_limit(limit: int, a3: tuple) -> None:
    """concepts/cluster_queue#lendingLimit: b (nominal 6) lends at most ``limit`` of it; a
    (nominal 2, no borrowing limit) may reach 2 + limit."""
    text = config_yaml([cq("a", 2), cq("b", {"nominal": 6, "lending_limit": limit})])
    got, _ = run(text, THREE_OF_TWO)
    assert got == {"a1": (0.0, 100.0, 0), "a2": (0.0, 100.0, 0), "a3": a3}


def test_reclaim_lowest_priority_first() -> None:
    """concepts/preemption (reclaimWithinCohort: Any; candidates lower priority first, then
    the most recently admitted). b (nominal 4) uses 8. a1 (a nominal 4) at t=10 needs 2 back:
    b2 (priority 0) goes, though b3 (priority 5) started later. b2 ran 9 s: it resumes when
    b1 ends at 100 and finishes at 191."""
    text = config_yaml([cq("a", 4, preemption=RECLAIM_ANY), cq("b", 4)])
    got, audit = run(text, [job("b1", "b", 0, 4, 100, prio=5), job("b2", "b", 1, 2, 100),
                            job("b3", "b", 2, 2, 100, prio=5), job("a1", "a", 10, 2, 100)])
    assert got == {"b1": (0.0, 100.0, 0), "b2": (1.0, 191.0, 1), "b3": (2.0, 102.0, 0),
                   "a1": (10.0, 110.0, 0)}
    assert [(e.victim, e.reason) for e in audit.evictions] == [("b2", "InCohortReclamation")]


def test_reclaim_only_from_borrowing_queues() -> None:
    """concepts/preemption: reclaimWithinCohort takes from queues that borrow only. b (nominal
    2) uses 4, c (nominal 2) uses its 2 with the lowest priority; a1 (4, a's nominal) at t=10
    finds 2 free and evicts b's newest job, not c1."""
    text = config_yaml([cq("a", 4, preemption=RECLAIM_ANY), cq("b", 2), cq("c", 2)])
    got, _ = run(text, [job("b1", "b", 0, 2, 100), job("b2", "b", 1, 2, 100),
                        job("c1", "c", 2, 2, 100, prio=-5), job("a1", "a", 10, 4, 100)])
    assert got == {"b1": (0.0, 100.0, 0), "b2": (1.0, 191.0, 1), "c1": (2.0, 102.0, 0),
                   "a1": (10.0, 110.0, 0)}


def test_reclaim_lower_priority_spares_equal_priority() -> None:
    """reclaimWithinCohort: LowerPriority: b's borrowed job has a1's priority: a1 waits for a
    job of b to end (t=100)."""
    text = config_yaml([cq("a", 4, preemption={"reclaim_within_cohort": "lower-priority"}),
                        cq("b", 4)])
    got, _ = run(text, [job("b1", "b", 0, 4, 100), job("b2", "b", 1, 4, 100),
                        job("a1", "a", 10, 2, 100)])
    assert got == {"b1": (0.0, 100.0, 0), "b2": (1.0, 101.0, 0), "a1": (100.0, 200.0, 0)}


def test_within_cluster_queue_lower_priority() -> None:
    """withinClusterQueue: LowerPriority, one node: hi (priority 5) evicts lo (0), not eq (5).
    hi4 (priority 5, 4 GPUs) has no lower-priority victim while lo waits; BestEffortFIFO lets
    lo back at 101 (eq ended), and at 110 (hi ended) hi4 evicts it again. lo ran 10 + 9 s."""
    text = config_yaml([cq("a", 4, cohort=None, preemption=LOWER)])
    got, _ = run(text, [job("lo", "a", 0, 2, 100), job("eq", "a", 1, 2, 100, prio=5),
                        job("hi", "a", 10, 2, 100, prio=5),
                        job("hi4", "a", 20, 4, 100, prio=5)], ONE_NODE)
    assert got == {"lo": (0.0, 291.0, 2), "eq": (1.0, 101.0, 0), "hi": (10.0, 110.0, 0),
                   "hi4": (110.0, 210.0, 0)}


@pytest.mark.parametrize(("strategy", "a1", "a2"), [
    ("StrictFIFO", (100.0, 200.0, 0), (200.0, 300.0, 0)),
    ("BestEffortFIFO", (102.0, 202.0, 0), (2.0, 102.0, 0)),
])
def test_queueing_strategy(strategy: str, a1: tuple, a2: tuple) -> None:
    """concepts/cluster_queue#queueing-strategy. a (nominal 4) runs a0 (2); b uses its 4.
    a1 (4 GPUs) cannot be admitted until a0 ends; StrictFIFO keeps a2 (2) behind it,
    BestEffortFIFO lets a2 take the 2 free GPUs at once."""
    text = config_yaml([cq("a", 4, queueing_strategy=strategy), cq("b", 4)])
    got, _ = run(text, [job("a0", "a", 0, 2, 100), job("a1", "a", 1, 4, 100),
                        job("a2", "a", 2, 2, 100), job("b0", "b", 0, 4, 300)])
    assert got == {"a0": (0.0, 100.0, 0), "a1": a1, "a2": a2, "b0": (0.0, 300.0, 0)}


def test_strict_fifo_logs_why_the_rest_of_its_queue_waits() -> None:
    """pending_reasons.csv (docs/tenancy.md, the audit files): the jobs behind a StrictFIFO
    head that cannot be admitted get a row for the queue (empty job id), naming the head,
    when the head changes. Before, the queue was logged as closed for a1's quota reason ("as
    a1, which asks no more"), and nothing said that a2 (from t=2 until a1 started at 100)
    waited behind a1."""
    text = config_yaml([cq("a", 4, queueing_strategy="StrictFIFO"), cq("b", 4)])
    _, audit = run(text, [job("a0", "a", 0, 2, 100), job("a1", "a", 1, 4, 100),
                          job("a2", "a", 2, 2, 100), job("b0", "b", 0, 4, 300)])
    rows = [(p.time, p.reason, p.detail) for p in audit.pending
            if p.cluster_queue == "a" and not p.job_id]
    assert rows[0] == (1.0, Reason.STRICT_FIFO, "a1")  # from t=1 on: a2 arrives behind a1
    assert {reason for _, reason, _ in rows} == {Reason.STRICT_FIFO}
    assert [t for t, _, head in rows if head == "a1"] == [1.0]  # logged when the head changes


def test_strict_fifo_does_not_wait_behind_a_job_backing_off() -> None:
    """Kueue ``pkg/queue/cluster_queue.go`` ``PushOrUpdate``: a workload whose requeue
    backoff has not expired is kept with the inadmissible workloads, out of the heap, so it
    is no head a StrictFIFO queue waits behind. hi (priority 5) evicts lo at t=10; lo backs
    off until 70 (base 60). late (submitted after lo) starts when hi ends at 30, not at 70."""
    text = config_yaml([cq("a", 4, cohort=None, queueing_strategy="StrictFIFO",
                           preemption=LOWER)], requeue={"base_seconds": 60})
    got, _ = run(text, [job("lo", "a", 0, 2, 100), job("hi", "a", 10, 4, 20, prio=5),
                        job("late", "a", 20, 2, 30)], ONE_NODE)
    assert got == {"lo": (0.0, 160.0, 1), "hi": (10.0, 30.0, 0), "late": (30.0, 60.0, 0)}


@pytest.mark.parametrize(("when", "a2_flavor", "b1"), [
    ("Borrow", "v", (51.0, 151.0, 0)), ("TryNextFlavor", "x", (5.0, 105.0, 0))])
def test_when_can_borrow(when: str, a2_flavor: str, b1: tuple) -> None:
    """concepts/cluster_queue#flavorfungibility. a has v: 2, x: 4; b has v: 2 only. a2 fits
    v only by borrowing b's 2: Borrow takes v (and b1 waits for a2 to end at 51);
    TryNextFlavor takes x, which fits without borrowing, and b1 starts on v at once."""
    queues = [{"name": "a", "cohort": "co", "quotas": {"v": {"gpu": 2}, "x": {"gpu": 4}},
               "flavor_fungibility": {"when_can_borrow": when}},
              {"name": "b", "cohort": "co", "quotas": {"v": {"gpu": 2}}}]
    got, audit = run(config_yaml(queues, flavors=FLAVORS),
                     [job("a1", "a", 0, 2, 100), job("a2", "a", 1, 2, 50),
                      job("b1", "b", 5, 2, 100)], MIXED)
    assert got == {"a1": (0.0, 100.0, 0), "a2": (1.0, 51.0, 0), "b1": b1}
    assert audit.flavors[("a2", 1.0)] == ("a", a2_flavor)


@pytest.mark.parametrize(("weight", "a2", "b1"), [
    (1, (150.0, 250.0, 0), (50.0, 150.0, 0)), (3, (50.0, 150.0, 0), (150.0, 250.0, 0))])
def test_fair_sharing_weight_orders_admission(weight: int, a2: tuple, b1: tuple) -> None:
    """concepts/fair_sharing: among heads, the queue with the lowest share with its job
    admitted goes first; the share is divided by the weight. a (nominal 2) borrows 2, b
    (nominal 2) none; c1 frees 2 GPUs at t=50 for one of a2, b1 (both at t=10). With a2, a
    borrows 4 of the cohort's 8: 500 / weight; with b1, b borrows 2: 250. Weight 1: b1 first;
    weight 3 (167): a2 first."""
    text = config_yaml([cq("a", 2, weight=weight), cq("b", 2), cq("c", 4)],
                       fair_sharing={"enabled": True})
    got, _ = run(text, [job("a0", "a", 0, 2, 1000), job("a1", "a", 0, 2, 1000),
                        job("b0", "b", 0, 2, 1000), job("c1", "c", 0, 2, 50),
                        job("a2", "a", 10, 2, 100), job("b1", "b", 10, 2, 100)])
    assert got == {"a0": (0.0, 1000.0, 0), "a1": (0.0, 1000.0, 0), "b0": (0.0, 1000.0, 0),
                   "c1": (0.0, 50.0, 0), "a2": a2, "b1": b1}


@pytest.mark.parametrize(("weight", "a1", "b1", "victim"), [
    (0.5, (1.0, 193.0, 1), (2.0, 102.0, 0), "a1"), (2, (1.0, 101.0, 0), (2.0, 193.0, 1), "b1")])
def test_fair_sharing_weight_picks_the_victim_queue(weight: float, a1: tuple, b1: tuple,
                                                    victim: str) -> None:
    """concepts/fair_sharing#preemption: c1 (within c's nominal) at t=10 takes 2 GPUs back
    from the queue with the highest share. a and b (nominal 2 each) both borrow 2 of the
    cohort's 8: 250 / weight. a at weight 0.5 (500) gives up its newest job a1, at weight 2
    (125) b (250) gives up b1; the victim ran 9 s and resumes when the other's job ends at
    101 or 102."""
    text = config_yaml([cq("a", 2, weight=weight), cq("b", 2), cq("c", 4, preemption=RECLAIM_ANY)],
                       fair_sharing={"enabled": True})
    got, audit = run(text, [job("a0", "a", 0, 2, 1000), job("a1", "a", 1, 2, 100),
                            job("b0", "b", 0, 2, 1000), job("b1", "b", 2, 2, 100),
                            job("c1", "c", 10, 2, 100)])
    assert got == {"a0": (0.0, 1000.0, 0), "a1": a1, "b0": (0.0, 1000.0, 0), "b1": b1,
                   "c1": (10.0, 110.0, 0)}
    assert [(e.victim, e.reason) for e in audit.evictions] == [(victim, "InCohortFairSharing")]


@pytest.mark.parametrize(("when", "a1_flavor", "b1"), [
    ("Preempt", "v", (0.0, 200.0, 1)), ("TryNextFlavor", "x", (0.0, 100.0, 0))])
def test_when_can_preempt(when: str, a1_flavor: str, b1: tuple) -> None:
    """concepts/cluster_queue#flavorfungibility. b (v: 0) borrows all of a's v; a1 (within
    a's v: 4, reclaim any) needs preemption in v, while x is free. Preempt stops at v and
    evicts b1 (it ran 10 s, resumes at 110); TryNextFlavor takes x."""
    queues = [{"name": "a", "cohort": "co", "quotas": {"v": {"gpu": 4}, "x": {"gpu": 4}},
               "preemption": RECLAIM_ANY, "flavor_fungibility": {"when_can_preempt": when}},
              {"name": "b", "cohort": "co", "quotas": {"v": {"gpu": 0}}}]
    got, audit = run(config_yaml(queues, flavors=FLAVORS),
                     [job("b1", "b", 0, 4, 100), job("a1", "a", 10, 2, 100)], MIXED)
    assert got == {"b1": b1, "a1": (10.0, 110.0, 0)}
    assert audit.flavors[("a1", 10.0)] == ("a", a1_flavor)


@pytest.mark.parametrize("when", ["Preempt", "TryNextFlavor"])
def test_flavor_without_victims_is_passed_over(when: str) -> None:
    """pkg/scheduler/flavorassigner (the preemption oracle): a flavor that needs preemption
    but whose victim search finds no one (``noPreemptionCandidates``) ranks below one with
    victims, and ``whenCanPreempt: Preempt`` stops only at a flavor with victims. a (v: 4,
    x: 4, within lower-priority) runs hv (priority 10) on v and lx (0) on x; h (5) finds no
    victim on v and evicts lx on x at once, under both policies. Before, h took v, the first
    flavor needing preemption, found no victim and waited for hv to end at 100."""
    queues = [{"name": "a", "quotas": {"v": {"gpu": 4}, "x": {"gpu": 4}}, "preemption": LOWER,
               "flavor_fungibility": {"when_can_preempt": when}}]
    got, audit = run(config_yaml(queues, flavors=FLAVORS),
                     [job("hv", "a", 0, 4, 100, prio=10), job("lx", "a", 0, 4, 100),
                      job("h", "a", 5, 4, 100, prio=5)], MIXED)
    assert got["h"] == (5.0, 105.0, 0)
    assert audit.flavors[("h", 5.0)] == ("a", "x")
    assert [(e.victim, e.preemptor, e.reason) for e in audit.evictions] == [
        ("lx", "h", "InClusterQueue")]


def test_reclaim_flavor_preferred_over_own_queue_preemption() -> None:
    """flavorassigner's modes: ``reclaim`` (victims in other queues) is preferred over
    ``preempt`` (only the queue's own lower-priority jobs). a (v: 4, x: 4, within
    lower-priority, reclaim any) runs lo (0) on v; b (x: 0) borrows a's x with b1. h (5)
    needs preemption in both flavors and takes x back from b (InCohortReclamation) instead of
    evicting its own lo on v."""
    queues = [{"name": "a", "cohort": "co", "quotas": {"v": {"gpu": 4}, "x": {"gpu": 4}},
               "preemption": {**LOWER, **RECLAIM_ANY}},
              {"name": "b", "cohort": "co", "quotas": {"x": {"gpu": 0}}}]
    got, audit = run(config_yaml(queues, flavors=FLAVORS),
                     [job("lo", "a", 0, 4, 100), job("b1", "b", 0, 4, 100),
                      job("h", "a", 5, 4, 100, prio=5)], MIXED)
    assert audit.flavors[("h", 5.0)] == ("a", "x")
    assert [(e.victim, e.reason) for e in audit.evictions] == [("b1", "InCohortReclamation")]
    assert got["lo"] == (0.0, 100.0, 0)


def test_preempt_while_borrowing_goes_on_under_try_next_flavor_borrow() -> None:
    """flavorassigner ``shouldTryNextFlavor``: ``whenCanPreempt: Preempt`` stops at a
    flavor with victims only if the job would not borrow there, or ``whenCanBorrow`` is
    Borrow. a (v: 2, x: 2, within lower-priority, borrowWithinCohort) with b (v: 2, x: 2)
    in a cohort (b's flavors x first); b1 takes 4 of x and a's lo 4 of v, both by borrowing.
    h (5, 4 GPUs) needs preemption and borrowing in both flavors; with TryNextFlavor for
    borrowing it looks on past v (its own lo) to x, where it takes b1's GPUs
    (InCohortReclaimWhileBorrowing). Before, it stopped at v and evicted lo."""
    queues = [{"name": "a", "cohort": "co", "quotas": {"v": {"gpu": 2}, "x": {"gpu": 2}},
               "preemption": {**LOWER, "reclaim_within_cohort": "any",
                              "borrow_within_cohort": {"policy": "lower-priority"}},
               "flavor_fungibility": {"when_can_preempt": "Preempt",
                                      "when_can_borrow": "TryNextFlavor"}},
              {"name": "b", "cohort": "co", "quotas": {"x": {"gpu": 2}, "v": {"gpu": 2}}}]
    got, audit = run(config_yaml(queues, flavors=FLAVORS),
                     [job("b1", "b", 0, 4, 100), job("lo", "a", 0, 4, 100),
                      job("h", "a", 5, 4, 100, prio=5)], MIXED)
    assert (audit.flavors[("b1", 0.0)], audit.flavors[("lo", 0.0)]) == (("b", "x"), ("a", "v"))
    assert audit.flavors[("h", 5.0)] == ("a", "x")
    assert [(e.victim, e.reason) for e in audit.evictions] == [
        ("b1", "InCohortReclaimWhileBorrowing")]
    assert got["lo"] == (0.0, 100.0, 0)
