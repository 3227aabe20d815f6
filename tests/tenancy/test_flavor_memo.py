"""Issue 19: with two flavors, a failed victim search is remembered per (queue, flavor)
(``tenancy/memo.py``): later jobs of the queue assigned the same flavor, asking no less and
with usage unchanged, skip the search, and nothing else changes (admissions, evictions,
reasons); a search that failed for minimum runtimes only is not remembered."""

from __future__ import annotations

from typing import Any

import pytest
from builders import cluster_of
from harness import LAST_PENDING, R, W, config_yaml, run_scenario

import dlsched.tenancy.plugins as plugins
from dlsched.cluster.cluster import Node
from dlsched.tenancy.reasons import Reason

FLAVORS = [{"name": "v", "gpu_types": ["V100"]}, {"name": "a", "gpu_types": ["A100"]}]
CLUSTER = cluster_of(*(Node(f"n{i}", "V100" if i < 2 else "A100", 4) for i in range(4)))
QUOTAS = {"v": {"gpu": 4}, "a": {"gpu": 4}}
TEXT = config_yaml([{"name": "a", "cohort": "co", "quotas": QUOTAS,
                     "preemption": {"reclaim_within_cohort": "any", "min_runtime": 50}},
                    {"name": "b", "cohort": "co", "quotas": QUOTAS,
                     "preemption": {"min_runtime": 50}}], flavors=FLAVORS)
WAITING = [W("w1", "a", 2), W("w2", "a", 2, submit=1), W("w3", "a", 3, submit=2)]
A100_FULL = [R("a1", "a", 4, gpu_type="A100"), R("b3", "b", 4, gpu_type="A100")]
# a at nominal on V100, b within its nominal: no candidate anywhere (the memo's case)
NO_VICTIM = [R("a0", "a", 4, gpu_type="V100"), R("b1", "b", 4, gpu_type="V100"), *A100_FULL]
# b borrows 2 V100s, all of its jobs within their minimum runtime (now 100, started 60)
PROTECTED = [R("a0", "a", 2, gpu_type="V100"), R("b1", "b", 3, started=60, gpu_type="V100"),
             R("b2", "b", 3, started=60, gpu_type="V100"), *A100_FULL]


def _run(monkeypatch: pytest.MonkeyPatch, running: list[R], memo: bool
         ) -> tuple[Any, dict, int]:
    calls = []
    search = plugins.select_targets

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(args[2].job_id)
        return search(*args, **kw)

    monkeypatch.setattr(plugins, "select_targets", counted)
    if not memo:
        monkeypatch.setattr(plugins, "still_fails", lambda *a: False)
    out = run_scenario(TEXT, running, WAITING, cluster=CLUSTER)
    reasons = {j: (p.reason, p.detail) for j, p in LAST_PENDING.items()}
    return out, reasons, len(calls)


NEED, MIN = Reason.NEEDS_PREEMPTION, Reason.MIN_RUNTIME


# With PROTECTED, w1 and w2 wait for minimum runtimes (two searches each), but the larger w3
# would borrow with the victims gone, so no search helps it: a memo of w1's MIN_RUNTIME
# would have given w3 the wrong reason. Each job's flavor assignment asks the victim search of
# both flavors (Kueue's preemption oracle: a flavor without victims is passed over), and each
# failure not for minimum runtimes is remembered: A100 holds no candidate in either case.
@pytest.mark.parametrize(("running", "reasons", "searches"),
                         [(NO_VICTIM, (NEED, NEED, NEED), (6, 2)),
                          (PROTECTED, (MIN, MIN, NEED), (9, 7))])
def test_failed_search_is_remembered_per_flavor(monkeypatch: pytest.MonkeyPatch,
                                                running: list[R], reasons: tuple,
                                                searches: tuple[int, int]) -> None:
    with monkeypatch.context() as m:
        without = _run(m, running, memo=False)
    with_memo = _run(monkeypatch, running, memo=True)
    assert with_memo[:2] == without[:2]
    assert not without[0].admitted and not without[0].evicted
    assert {j: r for j, (r, _) in without[1].items()} == dict(zip(("w1", "w2", "w3"), reasons,
                                                                  strict=True))
    assert (without[2], with_memo[2]) == searches
