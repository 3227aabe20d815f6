"""Issue 14: on a contended cluster with several flavors, jobs alike in a cycle (queue, GPU
types, priority, request, usage version) whose preemption oracle finds no victims get the
earlier job's flavor assignment (``memo.SameAssignment``) instead of assigning over every
flavor again; only where each search the oracle would run is a hit of the per-flavor memo. The
reasons and the per-flavor audit rows do not change."""

from __future__ import annotations

from typing import Any

import pytest
from harness import LAST_PENDING, W, run_scenario
from test_flavor_memo import CLUSTER, NO_VICTIM, PROTECTED, TEXT

import dlsched.tenancy.plugins as plugins
from dlsched.tenancy.audit import TenantAudit
from dlsched.tenancy.reasons import Reason

# six jobs of two shapes, alike but for their submission times
WAITING = [W(f"w{i}", "a", 2 if i % 3 else 3, submit=i) for i in range(6)]


def _run(monkeypatch: pytest.MonkeyPatch, running: list, same: bool) -> tuple[Any, ...]:
    calls, rows = [], []
    assign, waits = plugins.assign, TenantAudit.waits

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(args[2])
        return assign(*args, **kw)

    def recorded(self: TenantAudit, *args: Any) -> None:
        rows.append(args)
        waits(self, *args)

    monkeypatch.setattr(plugins, "assign", counted)
    monkeypatch.setattr(TenantAudit, "waits", recorded)
    if not same:
        monkeypatch.setattr(plugins, "SameAssignment", lambda *a: None, raising=False)
    out = run_scenario(TEXT, running, WAITING, cluster=CLUSTER)
    reasons = {j: (p.reason, p.detail) for j, p in LAST_PENDING.items()}
    return out, reasons, rows, len(calls)


# NO_VICTIM: every flavor's search fails and is remembered, so each job after the first of its
# shape is given its assignment. PROTECTED: the 2-GPU jobs' searches fail for minimum runtimes
# only (not remembered): each job is assigned anew.
@pytest.mark.parametrize(("running", "assigned"), [(NO_VICTIM, (6, 2)), (PROTECTED, (6, 5))])
def test_alike_jobs_share_a_flavor_assignment(monkeypatch: pytest.MonkeyPatch, running: list,
                                              assigned: tuple[int, int]) -> None:
    with monkeypatch.context() as m:
        without = _run(m, running, same=False)
    with_same = _run(monkeypatch, running, same=True)
    assert with_same[:3] == without[:3]
    assert not without[0].admitted and not without[0].evicted
    assert len(without[2]) == 6 and all(len(row[3]) == 2 for row in without[2])
    assert Reason.NEEDS_PREEMPTION in {r for r, _ in without[1].values()}
    assert (without[3], with_same[3]) == assigned
