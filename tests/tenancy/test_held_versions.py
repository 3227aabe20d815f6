"""Issue 14: with ``reclaim_within_cohort`` other than ``any``, a job that finds no victims holds
quota (``TenantAdmission._hold``) and the next job of its queue releases it. Each hold and
release used to give the usage a new version, so no memo keyed by it (``memo.SameAssignment``,
the per-flavor failure memo) was ever hit again. Now a hold or release that brings the usage
back to values it had since the last reservation or eviction takes that state's version again
(``QuotaView._held``): searches are reused, and reasons, audit rows and holds do not change."""

from __future__ import annotations

from typing import Any

import pytest
from harness import LAST_PENDING, W, config_yaml, run_scenario
from test_flavor_memo import CLUSTER, FLAVORS, NO_VICTIM, QUOTAS

import dlsched.tenancy.plugins as plugins
import dlsched.tenancy.view as view
from dlsched.tenancy.audit import TenantAudit
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.quota import QuotaTree
from dlsched.tenancy.reasons import Reason

NEVER = {"reclaim_within_cohort": "never", "min_runtime": 50}
TEXT = config_yaml([{"name": "a", "cohort": "co", "quotas": QUOTAS, "preemption": NEVER},
                    {"name": "b", "cohort": "co", "quotas": QUOTAS, "preemption": NEVER}],
                   flavors=FLAVORS)
# five 2-GPU jobs per queue, the queues' turns alternating: each job releases its queue's hold
# and holds again
WAITING = [W(f"{q}{i}", q, 2, submit=i) for i in range(5) for q in "ab"]


def _run(monkeypatch: pytest.MonkeyPatch, interned: bool) -> tuple[Any, ...]:
    searches, holds, rows = [], [], []
    search, hold, waits = plugins.select_targets, view.QuotaView.hold, TenantAudit.waits

    def counted(*args: Any, **kw: Any) -> Any:
        searches.append(args[2].job_id)
        return search(*args, **kw)

    def held(self: view.QuotaView, *args: Any) -> None:
        holds.append(args)
        hold(self, *args)

    def recorded(self: TenantAudit, *args: Any) -> None:
        rows.append(args)
        waits(self, *args)

    monkeypatch.setattr(plugins, "select_targets", counted)
    monkeypatch.setattr(view.QuotaView, "hold", held)
    monkeypatch.setattr(TenantAudit, "waits", recorded)
    if not interned:
        monkeypatch.setattr(view, "exact_sums", lambda tree: False, raising=False)
    out = run_scenario(TEXT, NO_VICTIM, WAITING, cluster=CLUSTER)
    reasons = {j: (p.reason, p.detail) for j, p in LAST_PENDING.items()}
    return out, reasons, rows, holds, len(searches)


def test_holds_that_come_back_reuse_the_searches(monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        without = _run(m, interned=False)
    interned = _run(monkeypatch, interned=True)
    assert interned[:4] == without[:4]
    assert not without[0].admitted and not without[0].evicted
    assert {r for r, _ in without[1].values()} == {Reason.NEEDS_PREEMPTION}
    assert len(without[3]) == 10  # every job held its 2 GPUs
    assert (without[4], interned[4]) == (20, 6)


def test_a_state_reached_again_has_its_version_and_usage() -> None:
    config = parse_tenants(TEXT)
    tree = QuotaTree(config)
    assert view.exact_sums(tree)
    usage = view.Usage(tree)
    usage.add("a", "v", {"gpu": 3.0})
    held = _Held(config, tree, usage)
    start = (held.version, _values(held.usage))
    held.hold("a", "v", {"gpu": 2.0})
    after_a = (held.version, _values(held.usage))
    held.hold("b", "a", {"gpu": 1.0})
    held.release("a")
    held.hold("a", "v", {"gpu": 2.0})
    held.release("b")
    assert (held.version, _values(held.usage)) == after_a
    held.release("a")
    assert (held.version, _values(held.usage)) == start
    held.hold("a", "v", {"gpu": 0.5})  # not whole: no state is taken again from here on
    held.release("a")
    assert held.version not in (start[0], after_a[0])


class _Held(view.QuotaView):
    """A view over a given usage, without a cycle's state."""

    def __init__(self, config: Any, tree: QuotaTree, usage: view.Usage) -> None:
        self.config, self.usage, self.holds, self.version = config, usage, {}, 0
        self._last, self._exact = 0, True
        self._held_sig, self._states = {}, None


def _values(usage: view.Usage) -> dict:
    return {k: {fr: v for fr, v in used.items() if v} for k, used in usage.used.items()}
