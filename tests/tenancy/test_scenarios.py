"""The tenant scenario table: quotas, running jobs, incoming jobs -> admitted / evicted / pending
with reason. Each case runs one real ``run_cycle`` of ``with_tenants(fifo)`` on 4 nodes x 4 GPUs
(16 GPUs) unless it says otherwise; the comment on each case is its hand check."""

from __future__ import annotations

import pytest
from builders import cluster_of
from harness import (
    LAST_PENDING,
    R,
    W,
    config_yaml,
    cq,
    expect,
    run_scenario,
    without_types,
)

from dlsched.cluster.cluster import Node
from dlsched.tenancy.reasons import Reason

NEED, LIMIT, NOQ = Reason.NEEDS_PREEMPTION, Reason.BORROWING_LIMIT, Reason.NO_QUOTA
LOWER = {"within_cluster_queue": "lower-priority"}
NEWER = {"within_cluster_queue": "lower-or-newer-equal-priority"}
TWO = [cq("a", 8), cq("b", 8)]
FAIR_RUN = [R("a0", "a", 4), R("b1", "b", 8), R("b2", "b", 4, started=10)]
FULL_B = [R("b1", "b", 8, started=0), R("b2", "b", 4, started=10), R("b3", "b", 4, started=20)]


def reclaim(policy: str, **more: object) -> list[dict]:
    return [cq("a", 8, preemption={"reclaim_within_cohort": policy, **more}), cq("b", 8)]


NESTED = [{"name": "root"}, {"name": "x", "parent": "root"}]
NESTED_X_LIMIT = [{"name": "root"}, {"name": "x", "parent": "root",
                                     "quotas": {"f": {"gpu": {"nominal": 0,
                                                              "borrowing_limit": 2}}}}]


def nested(c_gpu: object = 8) -> list[dict]:
    return [cq("a", 4, cohort="x"), cq("b", 4, cohort="x"), cq("c", c_gpu, cohort="root")]


def fair(a_weight: float = 1.0) -> dict:
    return {"fair_sharing": {"enabled": True}}


def fair_queues(a_weight: float = 1.0) -> list[dict]:
    return [cq("a", 4, weight=a_weight, preemption={"reclaim_within_cohort": "any"}),
            cq("b", 4), cq("c", 8, preemption={"reclaim_within_cohort": "any"})]


CASES = [
    # a is empty, 4 <= nominal 8.
    ("fits-nominal", config_yaml(TWO), [], [W("a1", "a", 4)], expect(["a1"])),
    # a uses its 8; b's unused 8 can be borrowed.
    ("borrows-unused", config_yaml(TWO), [R("a0", "a", 8)], [W("a1", "a", 4)],
     expect(["a1"])),
    # borrowing limit 2: 8 + 4 > 8 + 2.
    ("borrowing-limit", config_yaml([cq("a", {"nominal": 8, "borrowing_limit": 2}),
                                     cq("b", 8)]),
     [R("a0", "a", 8)], [W("a1", "a", 4)], expect(pending={"a1": LIMIT})),
    # borrowing limit 4: 8 + 4 <= 8 + 4.
    ("borrowing-limit-exact", config_yaml([cq("a", {"nominal": 8, "borrowing_limit": 4}),
                                           cq("b", 8)]),
     [R("a0", "a", 8)], [W("a1", "a", 4)], expect(["a1"])),
    # b lends at most 4 of its 8: a may reach 12, not 16.
    ("lending-limit-blocks", config_yaml([cq("a", 8), cq("b", {"nominal": 8,
                                                               "lending_limit": 4})]),
     [R("a0", "a", 8)], [W("a1", "a", 8)], expect(pending={"a1": NEED})),
    ("lending-limit-allows", config_yaml([cq("a", 8), cq("b", {"nominal": 8,
                                                               "lending_limit": 4})]),
     [R("a0", "a", 8)], [W("a1", "a", 4)], expect(["a1"])),
    # b keeps 4 guaranteed: a borrowing from b's lendable part leaves b its 4.
    ("lending-limit-guarantee", config_yaml([cq("a", 8), cq("b", {"nominal": 8,
                                                                  "lending_limit": 4})]),
     [R("a0", "a", 12)], [W("b1", "b", 4)], expect(["b1"])),
    # No cohort: a uses its 8, nothing to borrow, nothing may be preempted.
    ("no-cohort-full", config_yaml([cq("a", 8, cohort=None)]), [R("a0", "a", 8)],
     [W("a1", "a", 1)], expect(pending={"a1": NEED})),
    # 12 > the 8 a could ever use.
    ("over-nominal-no-cohort", config_yaml([cq("a", 8, cohort=None)]), [],
     [W("a1", "a", 12)], expect(pending={"a1": NOQ})),
    # Gang: 8 GPUs or nothing; 6 available is not admitted partially.
    ("gang-all-or-nothing", config_yaml([cq("a", 6, cohort=None)]), [],
     [W("a1", "a", 8)], expect(pending={"a1": NOQ})),
    # cpu quota 16, job asks 2 x 10 = 20 CPUs.
    ("cpu-quota", config_yaml([{"name": "a", "quotas": {"f": {"gpu": 8, "cpu": 16}}}]), [],
     [W("a1", "a", 2, cpus_per_gpu=10)], expect(pending={"a1": NOQ})),
    # within lower-priority: prio 1 evicts the prio-0 job holding a's 8.
    ("within-lower-priority", config_yaml([cq("a", 8, cohort=None, preemption=LOWER)]),
     [R("a0", "a", 8)], [W("a1", "a", 8, prio=1)], expect(["a1"], ["a0"])),
    ("within-lower-equal-prio", config_yaml([cq("a", 8, cohort=None, preemption=LOWER)]),
     [R("a0", "a", 8)], [W("a1", "a", 8)], expect(pending={"a1": NEED})),
    # within never: even a higher priority waits.
    ("within-never", config_yaml([cq("a", 8, cohort=None)]), [R("a0", "a", 8)],
     [W("a1", "a", 8, prio=5)], expect(pending={"a1": NEED})),
    # lower-or-newer-equal: a0 (submitted at 0) is older than a1 (submitted 50): no.
    ("newer-equal-older-running", config_yaml([cq("a", 8, cohort=None, preemption=NEWER)]),
     [R("a0", "a", 8)], [W("a1", "a", 8, submit=50)], expect(pending={"a1": NEED})),
    # ...but a1 submitted at 0 is not newer than a0 (submitted at 0) either: equal, no.
    # A strictly lower priority still goes.
    ("newer-equal-lower", config_yaml([cq("a", 8, cohort=None, preemption=NEWER)]),
     [R("a0", "a", 8, prio=-1)], [W("a1", "a", 8)], expect(["a1"], ["a0"])),
    # Two victims needed for a gang of 8.
    ("gang-two-victims", config_yaml([cq("a", 8, cohort=None, preemption=LOWER)]),
     [R("a0", "a", 4), R("a9", "a", 4, started=5)], [W("a1", "a", 8, prio=1)],
     expect(["a1"], ["a0", "a9"])),
    # Greedy newest first: r1 (2 GPUs) then r2 (4) -> fits; giving r1 back still fits.
    ("give-back-unneeded", config_yaml([cq("a", 8, cohort=None, preemption=LOWER)]),
     [R("r3", "a", 2, started=10), R("r2", "a", 4, started=20), R("r1", "a", 2, started=30)],
     [W("a1", "a", 4, prio=1)], expect(["a1"], ["r2"])),
    # min runtime 100: a0 started at 50, now 100 -> protected.
    ("min-runtime-protects", config_yaml([cq("a", 8, cohort=None, preemption={
        **LOWER, "min_runtime": 100})]),
     [R("a0", "a", 8, started=50)], [W("a1", "a", 8, prio=1)],
     expect(pending={"a1": Reason.MIN_RUNTIME})),
    ("min-runtime-over", config_yaml([cq("a", 8, cohort=None, preemption={
        **LOWER, "min_runtime": 100})]),
     [R("a0", "a", 8, started=0)], [W("a1", "a", 8, prio=1)], expect(["a1"], ["a0"])),
    # reclaim any: b borrows 8 of a's; a takes 4 back from b's newest job.
    ("reclaim-any", config_yaml(reclaim("any")), FULL_B, [W("a1", "a", 4)],
     expect(["a1"], ["b3"])),
    # reclaim lower-priority: b's jobs have priority 5 > 0.
    ("reclaim-lower-blocked", config_yaml(reclaim("lower-priority")),
     [R("b1", "b", 8, prio=5), R("b2", "b", 8, prio=5, started=10)], [W("a1", "a", 4)],
     expect(pending={"a1": NEED})),
    ("reclaim-lower-allowed", config_yaml(reclaim("lower-priority")),
     [R("b1", "b", 8, prio=5), R("b2", "b", 8, prio=0, started=10)], [W("a1", "a", 4, prio=1)],
     expect(["a1"], ["b2"])),
    ("reclaim-never", config_yaml(TWO), FULL_B, [W("a1", "a", 4)],
     expect(pending={"a1": NEED})),
    # Reclaim only up to nominal: a at its nominal 8 cannot take b's nominal 8 to borrow.
    ("reclaim-not-to-borrow", config_yaml(reclaim("any")),
     [R("a0", "a", 8), R("b1", "b", 8)], [W("a1", "a", 4)], expect(pending={"a1": NEED})),
    # a needs 8 back: greedy takes b3 (newest, 4) then b2 (4) and fits; neither can be given
    # back, and b1 (8, within b's nominal 8 once the others are gone) stays.
    ("reclaim-two", config_yaml(reclaim("any")), FULL_B, [W("a1", "a", 8)],
     expect(["a1"], ["b2", "b3"])),
    # borrowWithinCohort: a (nominal 4) at 4 borrows for a prio-10 job; b borrows 4 at prio 0.
    ("borrow-within-cohort", config_yaml([
        cq("a", 4, preemption={"borrow_within_cohort": {"policy": "lower-priority",
                                                        "max_priority_threshold": 0}}),
        cq("b", 4), cq("c", 8)]),
     [R("a0", "a", 4), R("b1", "b", 4), R("b2", "b", 4, started=10), R("c1", "c", 4)],
     [W("a1", "a", 4, prio=10)], expect(["a1"], ["b2"])),
    ("borrow-within-cohort-threshold", config_yaml([
        cq("a", 4, preemption={"borrow_within_cohort": {"policy": "lower-priority",
                                                        "max_priority_threshold": -1}}),
        cq("b", 4), cq("c", 8)]),
     [R("a0", "a", 4), R("b1", "b", 4), R("b2", "b", 4, started=10), R("c1", "c", 4)],
     [W("a1", "a", 4, prio=10)], expect(pending={"a1": NEED})),
    # Nested: a borrows b's 4 and c's 8 through root: 4 + 8 <= 16.
    ("nested-borrow", config_yaml(nested(), cohorts=NESTED), [R("a0", "a", 4)],
     [W("a1", "a", 8)], expect(["a1"])),
    # Cohort x may borrow at most 2 from root: a reaches 4 (b) + 2, so 8 does not fit, 6 does.
    ("nested-cohort-borrowing-limit", config_yaml(nested(), cohorts=NESTED_X_LIMIT),
     [R("a0", "a", 4)], [W("a1", "a", 8)], expect(pending={"a1": NEED})),
    ("nested-cohort-limit-fits", config_yaml(nested(), cohorts=NESTED_X_LIMIT),
     [R("a0", "a", 4)], [W("a1", "a", 6)], expect(["a1"])),
    # c lends 2 of its 8 to root: a can use 4 (b) + 2 = 6 beyond its own.
    ("nested-lending-limit", config_yaml(nested({"nominal": 8, "lending_limit": 2}),
                                         cohorts=NESTED),
     [R("a0", "a", 4)], [W("a1", "a", 8), W("a2", "a", 6, submit=1)],
     expect(["a2"], pending={"a1": NEED})),
    # StrictFIFO: a1 (needs 8, 4 left) blocks a2; BestEffortFIFO lets a2 by.
    ("strict-fifo", config_yaml([cq("a", 8, cohort=None, queueing_strategy="StrictFIFO")]),
     [R("a0", "a", 4)], [W("a1", "a", 8), W("a2", "a", 2, submit=1)],
     expect(pending={"a1": NEED, "a2": Reason.STRICT_FIFO})),
    ("best-effort-fifo", config_yaml([cq("a", 8, cohort=None)]),
     [R("a0", "a", 4)], [W("a1", "a", 8), W("a2", "a", 2, submit=1)],
     expect(["a2"], pending={"a1": NEED})),
    # Order: b1 (no borrowing) goes before a1 (borrows), though a1 came first; 4 left in all.
    ("non-borrowing-first", config_yaml(TWO), [R("a0", "a", 8), R("b0", "b", 4)],
     [W("a1", "a", 4, submit=0), W("b1", "b", 4, submit=5)],
     expect(["b1"], pending={"a1": NEED})),
    # Order: both within nominal (10 each, quota over the 16 GPUs), priority 5 first.
    ("priority-across-queues", config_yaml([cq("a", 10), cq("b", 10)]),
     [R("a0", "a", 6), R("b0", "b", 6)], [W("a1", "a", 4), W("b1", "b", 4, prio=5, submit=9)],
     expect(["b1"], pending={"a1": Reason.NO_NODE_FITS})),
    ("unknown-queue", config_yaml(TWO), [], [W("z1", "nowhere", 1)],
     expect(pending={"z1": Reason.UNKNOWN_QUEUE})),
    # team-a is a local queue of a; a's next 8 would borrow, b's 8 would not: b1 first.
    ("local-queue", config_yaml(TWO, local_queues=[{"name": "team-a", "cluster_queue": "a"}]),
     [R("a0", "team-a", 8)], [W("a1", "team-a", 8), W("b1", "b", 8, submit=1)],
     expect(["b1"], pending={"a1": NEED})),
    # Backoff: evicted once at now=100, base 60 -> not before 160.
    ("requeue-backoff", config_yaml(TWO, requeue={"base_seconds": 60}), [],
     [W("a1", "a", 1, preemptions=1)], expect(pending={"a1": Reason.BACKOFF})),
    # Fair sharing: b uses 12 of nominal 4, borrowing 8 of the cohort's 16 (share 500); c,
    # within nominal (share 0), takes 4 back from b's newest job (b -> 250).
    ("fair-preempts-biggest-borrower", config_yaml(fair_queues(), **fair()),
     FAIR_RUN, [W("c1", "c", 4)], expect(["c1"], ["b2"])),
    # a's share with its job 250 <= b's 250 after the eviction: allowed.
    ("fair-equal-final-share", config_yaml(fair_queues(), **fair()),
     FAIR_RUN, [W("a1", "a", 4)], expect(["a1"], ["b2"])),
    # a weight 0.5: a's share with its job 500 > b's final 250 and not < b's 500: no.
    ("fair-weight-blocks", config_yaml(fair_queues(0.5), **fair()),
     FAIR_RUN, [W("a1", "a", 4)], expect(pending={"a1": NEED})),
    # Both borrow 4 (250 each); a with its job 500 > 0 and not < 250: no preemption.
    ("fair-no-back-and-forth", config_yaml(fair_queues(), **fair()),
     [R("a0", "a", 8), R("b1", "b", 8)], [W("a1", "a", 4)], expect(pending={"a1": NEED})),
]


@pytest.mark.parametrize(("text", "running", "waiting", "want"),
                         [pytest.param(*case[1:], id=case[0]) for case in CASES])
def test_scenario(text: str, running: list, waiting: list, want: object) -> None:
    assert without_types(run_scenario(text, running, waiting)) == want


def test_at_least_thirty_scenarios() -> None:
    assert len(CASES) >= 30


MIXED = cluster_of(Node("v0", "V100", 4), Node("v1", "V100", 4), Node("x0", "A100", 4),
                   Node("x1", "A100", 4))
FLAVORS = [{"name": "v", "gpu_types": ["V100"]}, {"name": "x", "gpu_types": ["A100"]}]


def _two_flavor(cohort: str | None, fungibility: dict, b: bool = False) -> str:
    queues = [{"name": "a", "quotas": {"v": {"gpu": 4}, "x": {"gpu": 4 if b else 8}},
               "flavor_fungibility": fungibility, **({"cohort": cohort} if cohort else {})}]
    if b:
        queues.append({"name": "b", "cohort": cohort, "quotas": {"v": {"gpu": 4},
                                                                 "x": {"gpu": 4}}})
    return config_yaml(queues, flavors=FLAVORS)


@pytest.mark.parametrize(("text", "admitted", "gpu_type"), [
    # v needs preemption (a uses its 4 there); TryNextFlavor -> x fits.
    pytest.param(_two_flavor(None, {}), {"a1"}, "A100", id="preempt-try-next"),
    # whenCanPreempt Preempt stops only at a flavor with victims (Kueue's preemption
    # oracle): nothing may be preempted in v, so it goes on to x, which fits.
    pytest.param(_two_flavor(None, {"when_can_preempt": "Preempt"}), {"a1"}, "A100",
                 id="preempt-no-victims-goes-on"),
    # v fits by borrowing b's 4: Borrow takes it.
    pytest.param(_two_flavor("co", {}, b=True), {"a1"}, "V100", id="borrow-takes"),
    # TryNextFlavor prefers x, which fits without borrowing.
    pytest.param(_two_flavor("co", {"when_can_borrow": "TryNextFlavor"}, b=True), {"a1"},
                 "A100", id="borrow-try-next"),
])
def test_flavor_fungibility(text: str, admitted: set, gpu_type: str | None) -> None:
    out = run_scenario(text, [R("a0", "a", 4, gpu_type="V100")], [W("a1", "a", 4)],
                       cluster=MIXED)
    assert out.admitted == admitted
    if gpu_type:
        assert out.gpu_types["a1"] == gpu_type


def test_pending_reason_and_position() -> None:
    """Visibility: each pending job's reason and 0-based position in its cluster queue."""
    text = config_yaml([cq("a", 8, cohort=None, queueing_strategy="StrictFIFO")])
    run_scenario(text, [R("a0", "a", 4)], [W("a1", "a", 8), W("a2", "a", 2, submit=1),
                                           W("a3", "a", 1, prio=1, submit=2)])
    # a3 has the higher priority: it is a's head and fits; a1 is next and blocks a2. Positions
    # count the jobs still pending after the cycle (Kueue's positionInClusterQueue): a3 has left.
    assert "a3" not in LAST_PENDING
    assert (LAST_PENDING["a1"].position, LAST_PENDING["a1"].reason) == (0, NEED)
    assert (LAST_PENDING["a2"].position, LAST_PENDING["a2"].reason) == (1, Reason.STRICT_FIFO)
    assert str(LAST_PENDING["a2"]) == (f"{Reason.STRICT_FIFO.value} (a1); position 1 in a")
