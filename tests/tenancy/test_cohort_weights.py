"""Hierarchical fair sharing: cohort weights and the comparison below the lowest common
ancestor (Kueue KEP-79 with fair sharing; docs/tenancy.md "Cohort weights").

Every scenario runs on 4 nodes x 4 GPUs (16 GPUs), one flavor ``f``; shares are hand-computed
as 1000 x borrowed / parent's subtree quota / weight. The admission cases patch the tenant
layer's rank to ``fairshare.admission_rank`` (the one-line change docs/tenancy.md asks of
``plugins.py``); with it already made, the patch is a no-op.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from harness import R, W, config_yaml, cq, expect, run_scenario, without_types

from dlsched.errors import InputError
from dlsched.tenancy import fairshare
from dlsched.tenancy.loader import load_tenants, parse_tenants
from dlsched.tenancy.quota import QuotaTree, Usage

FAIR = {"fair_sharing": {"enabled": True}}
RECLAIM = {"preemption": {"reclaim_within_cohort": "any"}}


def cohorts(**weights: float) -> list[dict[str, Any]]:
    """A root cohort and one sub-cohort per keyword, with that weight."""
    return [{"name": "root"}, *({"name": n, "parent": "root", "weight": w}
                                for n, w in weights.items())]


def jobs(queue: str, count: int, first: int = 0) -> list[R]:
    """``count`` running 1-GPU jobs of ``queue``, started at t=first, first+1, ..."""
    return [R(f"{queue}-{i}", queue, 1, started=first + i) for i in range(count)]


# -- admission order: sub-cohorts compete by their weighted shares -------------------------
# A (weight wa): a1 nominal 2; B (weight 1): b1 nominal 2; lender (in root) nominal 12.
# a1 and b1 each have one 2-GPU head waiting and 2 GPUs are free: one of them is admitted.
# Share with the job = 1000 x (usage + 2 - 2) / 16 / weight.
ADMISSION = [
    # (id, wa, a1 running, b1 running, lender running, admitted)
    ("nobody-borrows-heavier-A-first", 2, 2, 2, 10, "a"),   # A 62.5 < B 125
    ("A-borrows-4-B-2-A-still-first", 2, 6, 4, 4, "a"),     # A 187.5 < B 250
    ("A-borrows-8-B-2-B-first", 2, 10, 4, 0, "b"),          # A 312.5 > B 250
    ("equal-weights-A-borrows-4-B-first", 1, 6, 4, 4, "b"),  # A 375 > B 250
]


@pytest.mark.parametrize(("wa", "a_run", "b_run", "lender_run", "first"),
                         [pytest.param(*case[1:], id=case[0]) for case in ADMISSION])
def test_sub_cohort_with_lower_weighted_share_admits_first(
        wa: float, a_run: int, b_run: int, lender_run: int, first: str) -> None:
    text = config_yaml([cq("a1", 2, "A"), cq("b1", 2, "B"), cq("lender", 12, "root")],
                       cohorts=cohorts(A=wa, B=1), **FAIR)
    running = [R("a-run", "a1", a_run), R("b-run", "b1", b_run)]
    running += [R("l-run", "lender", lender_run)] if lender_run else []
    got = run_scenario(text, running, [W("a-new", "a1", 2), W("b-new", "b1", 2, submit=1)])
    assert got.admitted == {f"{first}-new"}


def test_sub_cohort_share_not_queue_share_decides() -> None:
    """a1 itself borrows little (2 above its nominal) but its sub-cohort A borrows 6 with the
    job (a2 borrows 4): A's share 375 > B's 250, so B's job goes first. Compared queue to
    queue (a1 500 of A's pool, b1 2000 of B's), a1's would have."""
    text = config_yaml([cq("a1", 2, "A"), cq("a2", 2, "A"), cq("b1", 2, "B"),
                        cq("lender", 10, "root")], cohorts=cohorts(A=1, B=1), **FAIR)
    running = [R("a1-run", "a1", 2), R("a2-run", "a2", 6), R("b1-run", "b1", 4),
               R("l-run", "lender", 2)]
    got = run_scenario(text, running, [W("a-new", "a1", 2), W("b-new", "b1", 2, submit=1)])
    assert got.admitted == {"b-new"}


# -- fair-sharing preemption: victims from the sub-cohort most over its weighted share -----
# A (wa): a1 nominal 2; C (wc): c1 nominal 2; B: b1 nominal 4 (reclaims); lender nominal 8.
# The cluster is full; b1 asks 1 GPU (within its nominal, so B's share stays 0).
PREEMPTION = [
    # (id, wa, wc, a1 jobs, c1 jobs, lender jobs, victim)
    ("weights-2-1-takes-from-C", 2, 1, 6, 5, 5, "c1-4"),  # A 4/16/2=125 < C 3/16=187.5
    ("weights-1-1-takes-from-A", 1, 1, 6, 5, 5, "a1-5"),  # A 250 > C 187.5
    ("weight-0-cohort-first", 0, 1, 3, 7, 6, "a1-2"),     # A borrows 1: infinite share
]


@pytest.mark.parametrize(("wa", "wc", "a_jobs", "c_jobs", "l_jobs", "victim"),
                         [pytest.param(*case[1:], id=case[0]) for case in PREEMPTION])
def test_fair_preemption_takes_from_most_unfair_sub_cohort(
        wa: float, wc: float, a_jobs: int, c_jobs: int, l_jobs: int, victim: str) -> None:
    text = config_yaml([cq("a1", 2, "A"), cq("c1", 2, "C"), cq("b1", 4, "B", **RECLAIM),
                        cq("lender", 8, "root")], cohorts=cohorts(A=wa, C=wc, B=1), **FAIR)
    running = jobs("a1", a_jobs) + jobs("c1", c_jobs) + jobs("lender", l_jobs)
    got = run_scenario(text, running, [W("b-new", "b1", 1)])
    assert without_types(got) == expect(admitted=["b-new"], evicted=[victim])


def test_preemptor_compares_at_its_sub_cohort_against_other_sub_cohorts() -> None:
    """a1 (in A, nominal 2) asks 2 GPUs, within its own nominal, but A would then borrow 3
    (share 187.5); B borrows 2 (125): neither strategy lets A take B's GPUs (187.5 > 0 after,
    187.5 >= 125 before). Inside A (lowest common ancestor A), a1 (share 0) reclaims from a2
    (3 GPUs over a nominal of 0): two of a2's jobs, the latest started. Flat, b1's job would
    go instead (a1's own share is 0)."""
    text = config_yaml([cq("a1", 2, "A", **RECLAIM), cq("a2", 0, "A"), cq("b1", 0, "B"),
                        cq("lender", 14, "root")], cohorts=cohorts(A=1, B=1), **FAIR)
    running = jobs("a2", 3) + [R("b1-run", "b1", 2)] + jobs("lender", 11)
    got = run_scenario(text, running, [W("a-new", "a1", 2)])
    assert without_types(got) == expect(admitted=["a-new"], evicted=["a2-1", "a2-2"])


def test_flat_cohort_preempts_as_before() -> None:
    """The same queues in one flat cohort: a2's newest job goes first (share 187.5); then a2
    and b1 tie at 125 and Kueue takes the queue whose next candidate comes first in its
    candidate order (``TargetClusterQueueOrdering.nextTarget``: lower priority, then the more
    recently started): a2-1 (started at 1) before b1-run (at 0). Both a2 jobs are needed."""
    text = config_yaml([cq("a1", 2, "root", **RECLAIM), cq("a2", 0, "root"),
                        cq("b1", 0, "root"), cq("lender", 14, "root")], **FAIR)
    running = jobs("a2", 3) + [R("b1-run", "b1", 2)] + jobs("lender", 11)
    got = run_scenario(text, running, [W("a-new", "a1", 2)])
    assert without_types(got) == expect(admitted=["a-new"], evicted=["a2-1", "a2-2"])


# -- the share functions, by hand ----------------------------------------------------------
def _usage(text: str, used: dict[str, float]) -> Usage:
    usage = Usage(QuotaTree(parse_tenants(text)))
    for queue, gpus in used.items():
        usage.add(queue, "f", {"gpu": gpus})
    return usage


NESTED = config_yaml([cq("a1", 2, "A"), cq("a2", 2, "A"), cq("b1", 4, "B"),
                      cq("lender", 8, "root")], cohorts=cohorts(A=2, B=1))


@pytest.mark.parametrize(("key", "extra", "share"), [
    pytest.param("cohort:A", None, 1000 * 4 / 16 / 2, id="A-borrows-4-of-16-weight-2"),
    pytest.param("cohort:A", {("f", "gpu"): 2.0}, 1000 * 6 / 16 / 2, id="A-with-a-job"),
    pytest.param("cohort:B", None, 0.0, id="B-within-its-subtree"),
    pytest.param("a2", None, 1000 * 6 / 4, id="a2-of-A-pool"),
    pytest.param("a1", None, 0.0, id="a1-idle"),
])
def test_node_share_by_hand(key: str, extra: dict | None, share: float) -> None:
    usage = _usage(NESTED, {"a2": 8, "b1": 3})
    at = "a2" if extra else None
    assert fairshare.node_share(usage, key, extra, at=at) == pytest.approx(share)


def test_admission_rank_is_path_from_top_and_flat_is_share_value() -> None:
    usage = _usage(NESTED, {"a2": 8, "b1": 3})
    job = {("f", "gpu"): 1.0}
    assert fairshare.admission_rank(usage, "a1", job) == pytest.approx(
        (1000 * 5 / 16 / 2, 0.0))  # A borrows 5 (weight 2); a1 is within its nominal
    flat = _usage(config_yaml([cq("a", 2, "co"), cq("b", 6, "co")]), {"a": 5})
    assert tuple(fairshare.admission_rank(flat, "a", job)) == (
        fairshare.share_value(flat, "a", job),)
    assert fairshare.admission_rank(flat, "a", job) == pytest.approx((1000 * 4 / 8,))


@pytest.mark.parametrize(("preemptor", "target", "nodes"), [
    pytest.param("a1", "a2", ("a1", "a2"), id="siblings"),
    pytest.param("a1", "b1", ("cohort:A", "cohort:B"), id="across-sub-cohorts"),
    pytest.param("a1", "lender", ("cohort:A", "lender"), id="queue-in-root"),
    pytest.param("a1", "a1", ("a1", "a1"), id="same-queue"),
])
def test_almost_lca(preemptor: str, target: str, nodes: tuple[str, str]) -> None:
    assert fairshare.almost_lca(_usage(NESTED, {}), preemptor, target) == nodes


def test_most_unfair_descends_by_sub_cohort_share() -> None:
    """a2 has the highest queue share (1500), but B (3/16 = 187.5) is above A (4/16/2 =
    125), so b1 is taken from first."""
    usage = _usage(NESTED, {"a2": 8, "b1": 7})
    assert fairshare.most_unfair(usage, ["a2", "b1"]) == "b1"


def test_negative_cohort_weight_names_file_line_field() -> None:
    text = "flavors: [{name: f}]\ncohorts:\n  - {name: root}\n  - {name: x, weight: -1}\n"
    with pytest.raises(InputError, match=r"^t\.yaml:4:cohorts\[1\]\.weight: must be >= 0"):
        parse_tenants(text, "t.yaml")


def test_nested_weights_example_loads() -> None:
    config = load_tenants(Path(__file__).parents[2] / "examples/tenants/nested-weights.yaml")
    assert config.cohorts["research"].weight == 2
    assert config.cohorts["research"].parent == "org"


def test_kept_ranks_follow_the_usage_of_the_queues_sub_cohort() -> None:
    """The tenant layer keeps fair-sharing ranks by the usage values they read
    (``TenantAdmission._fair_rank``): the queue's and its sub-cohort's, not the queue's alone.
    A sibling's job moves the sub-cohort's share, and with it the rank of an idle queue."""
    from dlsched.policies.fifo import fifo
    from dlsched.tenancy.plugins import TenantAdmission

    config = parse_tenants(NESTED)
    admission = TenantAdmission(config, fifo().queue_sort)
    usage = _usage(NESTED, {"a2": 4.0, "b1": 2.0})
    request = {"gpu": 1.0}

    def rank() -> tuple[float, ...]:
        return admission._fair_rank(usage, "a1", "f", request, ("a1", (("gpu", 1.0),)))

    assert rank() == fairshare.admission_rank(usage, "a1", {("f", "gpu"): 1.0})
    before = rank()
    usage.add("a2", "f", {"gpu": 2.0})  # a1's own usage stays; its sub-cohort borrows more
    assert rank() == fairshare.admission_rank(usage, "a1", {("f", "gpu"): 1.0}) != before
    usage.add("b1", "f", {"gpu": 1.0})  # another sub-cohort: the same rank, kept
    kept = len(admission._fair_ranks)
    assert rank() == fairshare.admission_rank(usage, "a1", {("f", "gpu"): 1.0})
    assert len(admission._fair_ranks) == kept
