"""Issue 19: Kueue rules the tenant layer missed, each a hand-checked scenario on 4 nodes x 4
GPUs (16 GPUs) through one real cycle (``harness.run_scenario``); the Kueue source each follows
is named in the test's docstring."""

from __future__ import annotations

import pytest
from builders import make_cluster
from harness import LAST_PENDING, R, W, config_yaml, cq, expect, run_scenario, without_types

from dlsched.tenancy.reasons import Reason

BWC = {"policy": "lower-priority", "max_priority_threshold": 0}
BORROW_RUN = [R("a0", "a", 4), R("b1", "b", 4), R("b2", "b", 4, started=10), R("c1", "c", 4)]


@pytest.mark.parametrize("reclaim", ["never", "lower-priority", "any"])
def test_borrow_within_cohort_with_reclaim(reclaim: str) -> None:
    """Item 1. a (nominal 4) runs 4 and asks 4 more at priority 10: it would borrow. b borrows
    4 at priority 0 (<= threshold 0): with borrowWithinCohort the candidate is
    ``ReclaimWhileBorrowing`` and the pass that allows borrowing goes first (Kueue
    ``classifyPreemptionVariant``, ``classicalPreemptions``), whatever reclaimWithinCohort is
    (Kueue's validation requires it not Never; dlsched also accepts never)."""
    text = config_yaml([cq("a", 4, preemption={"reclaim_within_cohort": reclaim,
                                               "borrow_within_cohort": BWC}),
                        cq("b", 4), cq("c", 8)])
    got = run_scenario(text, BORROW_RUN, [W("a1", "a", 4, prio=10)])
    assert without_types(got) == expect(["a1"], ["b2"])


def test_reclaim_without_borrow_within_cohort_never_lets_the_preemptor_borrow() -> None:
    """Without borrowWithinCohort the same job waits: a is at its nominal quota, so Kueue
    runs only the borrowing pass, where reclaim candidates without hierarchical advantage are
    invalid."""
    text = config_yaml([cq("a", 4, preemption={"reclaim_within_cohort": "any"}),
                        cq("b", 4), cq("c", 8)])
    got = run_scenario(text, BORROW_RUN, [W("a1", "a", 4, prio=10)])
    assert got.evicted == frozenset() and got.pending == {"a1": Reason.NEEDS_PREEMPTION}


def test_victims_of_a_pass_without_borrowing_are_all_evicted() -> None:
    """Item 3. a (nominal 8) runs 6 and asks 4 more at priority 1: it would borrow, so Kueue
    tries the pass without borrowing first (reclaim without borrowWithinCohort, a below its
    nominal: ``classicalPreemptions``): b's borrowed job b2 and a's own lower-priority a-low
    must both go, so that a stays at 8. Evicting b2 alone would free enough GPUs, but a would
    then borrow (10 of 8), which that pass forbids; the cycle's give-back must keep both."""
    text = config_yaml([cq("a", 8, preemption={"reclaim_within_cohort": "any",
                                               "within_cluster_queue": "lower-priority"}),
                        cq("b", 8), cq("c", 4)])
    running = [R("a-low", "a", 2), R("a-hi", "a", 4, prio=5), R("b1", "b", 8),
               R("b2", "b", 4, started=10), R("c1", "c", 2)]
    got = run_scenario(text, running, [W("a1", "a", 4, prio=1)],
                       cluster=make_cluster(nodes=5, gpus=4))
    assert without_types(got) == expect(["a1"], ["b2", "a-low"])


FAIR = {"fair_sharing": {"enabled": True}}


def test_fair_sharing_tries_the_queues_next_candidate() -> None:
    """Item 2 (Kueue ``runFirstFsStrategy``). a (nominal 4) runs 4 and asks 2: with it, a
    borrows 2 of the cohort's 16 (share 125). b (nominal 4) runs 10 (share 375). b's newest job
    (5 GPUs) fails LessThanOrEqualToFinalShare (b would be left at 62.5 < 125); Kueue then
    tries b's next candidate, b-small (1 GPU: b left at 312.5 >= 125), which passes and frees
    enough with the one free GPU. Dropping b at its first rejection would instead evict the
    5-GPU job through LessThanInitialShare."""
    text = config_yaml([cq("a", 4, preemption={"reclaim_within_cohort": "any"}), cq("b", 4),
                        cq("c", 8)], **FAIR)
    running = [R("a0", "a", 4), R("b-base", "b", 4), R("b-small", "b", 1, started=10),
               R("b-big", "b", 5, started=20), R("c1", "c", 1)]
    got = run_scenario(text, running, [W("a1", "a", 2)])
    assert without_types(got) == expect(["a1"], ["b-small"])


def test_fair_sharing_second_strategy_keeps_first_picks() -> None:
    """Item 2 (Kueue ``runSecondFsStrategy``): victims chosen by the first strategy stay when
    the second runs. a asks 4 (with it a borrows 4: share 250). b (nominal 0) runs 2 + 1:
    removing b's newest 1-GPU job leaves b at 125 < 250 (fails S2-a, kept for S2-b); c
    (nominal 4) runs 4 + 2 + 1 (share 187.5): its newest 1-GPU job leaves c at 125, fails too.
    S2-b: a's 250 is not below b's 187.5 nor c's 187.5... so nothing: a waits."""
    text = config_yaml([cq("a", 4, preemption={"reclaim_within_cohort": "any"}), cq("b", 0),
                        cq("c", 4), cq("d", 8)], **FAIR)
    running = [R("a0", "a", 4), R("b1", "b", 2), R("b2", "b", 1, started=5),
               R("c0", "c", 4), R("c1", "c", 2), R("c2", "c", 1, started=5), R("d1", "d", 2)]
    got = run_scenario(text, running, [W("a1", "a", 4)])
    assert got.evicted == frozenset() and "a1" in got.pending


def test_over_nominal_request_may_not_preempt() -> None:
    """Item 4 (Kueue ``fitsResourceQuota``): a job asking more than its queue's nominal quota
    looks for no victims unless borrowWithinCohort is on. a (nominal 4, reclaim any) asks 6
    with b borrowing: Kueue leaves b's jobs alone."""
    text = config_yaml([cq("a", 4, preemption={"reclaim_within_cohort": "any"}), cq("b", 4),
                        cq("c", 8)])
    running = [R("b1", "b", 8), R("b2", "b", 4, started=10), R("c1", "c", 4)]
    got = run_scenario(text, running, [W("a1", "a", 6)])
    assert got.evicted == frozenset() and got.pending == {"a1": Reason.NEEDS_PREEMPTION}


def test_capacity_held_for_a_queue_that_cannot_reclaim() -> None:
    """Item 4 (Kueue ``reserveCapacityForUnreclaimablePreempt``). a (nominal 8, reclaim
    lower-priority) asks 8 at priority 0 with 4 GPUs free: b's borrowing job has priority 5,
    so no victim. The 8 a may use of its nominal are held for the rest of the cycle: b's next
    job (2 GPUs, would borrow) does not take the 4 free GPUs."""
    text = config_yaml([cq("a", 8, preemption={"reclaim_within_cohort": "lower-priority"}),
                        cq("b", 8)])
    running = [R("b1", "b", 8, prio=5), R("b3", "b", 4, prio=5)]
    got = run_scenario(text, running, [W("a1", "a", 8), W("b2", "b", 2, prio=5, submit=1)])
    assert got.admitted == frozenset()
    assert got.pending["b2"] == Reason.NEEDS_PREEMPTION


def test_classical_order_borrowing_less_far_first() -> None:
    """Item 4 (Kueue ``makeClassicalIterator``: ``assignment.Borrows()`` is the height of the
    lowest subtree that holds the request). x = {a, b}, root = {x, c}. a borrows from b inside
    x (height 1); c borrows from root (height 2): a1 goes first although c1 came first, and
    takes the last 4 GPUs."""
    cohorts = [{"name": "root"}, {"name": "x", "parent": "root"}]
    text = config_yaml([cq("a", 2, cohort="x"), cq("b", 6, cohort="x"),
                        cq("c", 4, cohort="root"), cq("d", 4, cohort="root")], cohorts=cohorts)
    running = [R("a0", "a", 2), R("c0", "c", 4), R("d0", "d", 4), R("b0", "b", 2)]
    got = run_scenario(text, running, [W("c1", "c", 4, submit=0), W("a1", "a", 4, submit=5)])
    assert got.admitted == frozenset({"a1"})


def test_min_runtime_reason_only_when_it_blocks() -> None:
    """Item 5: a's job would borrow and nothing may be preempted for a borrower (reclaim
    without borrowWithinCohort); a protected job elsewhere is not the reason."""
    text = config_yaml([cq("a", 4, preemption={"reclaim_within_cohort": "any",
                                               "min_runtime": 1000}),
                        cq("b", 4, preemption={"min_runtime": 1000}), cq("c", 8)])
    running = [R("a0", "a", 4, started=90), R("b1", "b", 8, started=90), R("c1", "c", 4)]
    run_scenario(text, running, [W("a1", "a", 4)])
    assert LAST_PENDING["a1"].reason is Reason.NEEDS_PREEMPTION


def test_min_runtime_reason_when_it_blocks() -> None:
    """The same a1 within nominal: b's borrowed jobs would be victims but are protected."""
    text = config_yaml([cq("a", 8, preemption={"reclaim_within_cohort": "any"}),
                        cq("b", 4, preemption={"min_runtime": 1000}), cq("c", 4)])
    running = [R("b1", "b", 8, started=90), R("b2", "b", 4, started=95), R("c1", "c", 4)]
    run_scenario(text, running, [W("a1", "a", 4)])
    assert LAST_PENDING["a1"].reason is Reason.MIN_RUNTIME


def test_cycle_state_freed_without_the_garbage_collector() -> None:
    """Item 6: the tenant layer's per-cycle data lives in the state's scratchpad; nothing in
    it refers back to the state, so a cycle's state is freed by reference counting alone (the
    simulator runs with the collector off: a 2,000-job run peaked at 1.2 GB)."""
    import gc
    import weakref

    from dlsched.scheduling import cycle

    states: list[weakref.ref] = []
    original = cycle.CycleState.__dict__["begin"]
    begin = cycle.CycleState.begin

    def tracked(snapshot):  # type: ignore[no-untyped-def]
        state = begin(snapshot)
        states.append(weakref.ref(state))
        return state

    text = config_yaml([cq("a", 4, preemption={"reclaim_within_cohort": "any"}), cq("b", 4),
                        cq("c", 8)], **FAIR)
    enabled = gc.isenabled()
    gc.disable()
    try:
        cycle.CycleState.begin = tracked  # type: ignore[method-assign]
        run_scenario(text, BORROW_RUN, [W("a1", "a", 4, prio=10), W("c2", "c", 2)])
        freed = [ref() is None for ref in states]
    finally:
        cycle.CycleState.begin = original  # type: ignore[method-assign]
        if enabled:
            gc.enable()
    assert freed and all(freed)
