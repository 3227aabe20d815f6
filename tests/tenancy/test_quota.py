"""Quota formulas on the cohort tree, fair-share values, decay and admission order, by hand."""

from __future__ import annotations

import math

import pytest
from harness import config_yaml, cq
from hypothesis import given
from hypothesis import strategies as st

from dlsched.tenancy.config import ShareStrategy
from dlsched.tenancy.fairshare import DecayedUsage, dominant_share, share_value, strategy_allows
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.quota import QuotaTree, Usage

F = ("f", "gpu")


def _usage(queues: list[dict], **top: object) -> Usage:
    return Usage(QuotaTree(parse_tenants(config_yaml(queues, **top))))


def test_lending_limit_sets_guarantee_and_pool() -> None:
    usage = _usage([cq("a", 8), cq("b", {"nominal": 8, "lending_limit": 2})])
    tree = usage.tree
    assert tree.guaranteed["b"][F] == 6  # 8 - 2 kept for b
    assert tree.subtree["cohort:co"][F] == 8 + 2  # a lends all 8, b lends 2
    assert usage.available("a", F) == 10
    assert usage.potential("a", F) == 10
    usage.add("b", "f", {"gpu": 5})  # b within its guarantee: the pool is untouched
    assert usage.available("a", F) == 10
    usage.add("b", "f", {"gpu": 2})  # 1 above the guarantee comes out of the pool
    assert usage.available("a", F) == 9
    assert usage.available("b", F) == 0 + 9  # max(0, 6 - 7) + the pool


def test_borrowing_limit_caps_parent_part() -> None:
    usage = _usage([cq("a", {"nominal": 4, "borrowing_limit": 3}), cq("b", 12)])
    assert usage.potential("a", F) == 7
    usage.add("a", "f", {"gpu": 6})
    assert usage.available("a", F) == 1
    assert usage.borrows("a", "f", {"gpu": 1}) and not usage.borrows("b", "f", {"gpu": 12})


@given(st.lists(st.tuples(st.sampled_from("ab"), st.integers(1, 6)), max_size=12))
def test_admitting_what_fits_keeps_quota(adds: list[tuple[str, int]]) -> None:
    """Admitting only what fits never uses more than the cohort's 16, always leaves b its
    guaranteed 4 (nominal 8 - lending limit 4), and removing everything restores zero; what
    is available is what a fresh copy computes."""
    usage = _usage([cq("a", 8), cq("b", {"nominal": 8, "lending_limit": 4})])
    admitted = []
    for queue, amount in adds:
        if usage.fits(queue, "f", {"gpu": amount}):
            usage.add(queue, "f", {"gpu": amount})
            admitted.append((queue, amount))
        assert usage.usage("a", F) + usage.usage("b", F) <= 16 + 1e-9
        assert usage.usage("a", F) <= 12 + 1e-9
        assert usage.available("b", F) >= max(0.0, 4 - usage.usage("b", F)) - 1e-9
        fresh = usage.copy()  # ``available`` is kept while no usage changes: as computed now
        assert all(usage.available(k, F) == fresh.available(k, F) for k in ("a", "b"))
    for queue, amount in admitted:
        usage.add(queue, "f", {"gpu": amount}, -1.0)
    assert all(abs(v) < 1e-9 for node in usage.used.values() for v in node.values())


def test_share_value_is_borrowed_over_lendable_per_weight() -> None:
    usage = _usage([cq("a", 4, weight=2.0), cq("b", 4), cq("c", 8)])
    usage.add("a", "f", {"gpu": 8})
    assert share_value(usage, "a") == pytest.approx(1000 * 4 / 16 / 2)
    assert share_value(usage, "b") == 0.0
    assert share_value(usage, "b", {F: 6}) == pytest.approx(1000 * 2 / 16)


@pytest.mark.parametrize(("strategy", "after", "before", "target_after", "allowed"), [
    (ShareStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, 250, 500, 250, True),
    (ShareStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, 300, 500, 250, False),
    (ShareStrategy.LESS_THAN_INITIAL_SHARE, 300, 500, 250, True),
    (ShareStrategy.LESS_THAN_INITIAL_SHARE, 500, 500, 0, False),
])
def test_strategies(strategy: ShareStrategy, after: float, before: float,
                    target_after: float, allowed: bool) -> None:
    assert strategy_allows(strategy, after, before, target_after) is allowed


def test_dominant_share() -> None:
    totals = {"gpu": 16, "cpu": 128}
    assert dominant_share({"gpu": 4, "cpu": 64}, totals) == 0.5  # cpu dominates
    assert dominant_share({"gpu": 4, "cpu": 64}, totals, weight=2) == 0.25
    assert dominant_share({"gpu": 4}, totals, weight=0) == math.inf


def test_decay_halves_per_half_life() -> None:
    usage = DecayedUsage(half_life=100.0)
    usage.advance(100.0, {"a": 1.0})  # accrued: integral of 2^(-(100-t)/100), t in 0..100
    accrued = 100 / math.log(2) * 0.5
    assert usage.value("a") == pytest.approx(accrued)
    usage.advance(200.0, {})
    assert usage.value("a") == pytest.approx(accrued / 2)
    with pytest.raises(ValueError):
        DecayedUsage(0.0)
