"""Issue 19: Slurm's fair-share factor (classic and Fair Tree) and DRF progressive filling as
admission orders, on their published examples."""

from __future__ import annotations

import pytest
from builders import make_cluster
from harness import W, config_yaml, run_scenario

from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.orders import hierarchy
from dlsched.tenancy.slurm_fairshare import Hierarchy, classic, fair_tree

# slurm.schedmd.com/classic_fair_share.html, "Example": accounts A (40 shares) and D (60);
# B (30) and C (10) under A, E (25) and F (35) under D; user 1 in B, users 2 and 3 in C (one
# share each), user 4 in E, user 5 in F; usage 0.2, 0.25, 0.25 of the machine for users 1, 2, 4.
SLURM_EXAMPLE = """
flavors: [{name: f}]
cohorts: [{name: A, weight: 40}, {name: D, weight: 60}, {name: B, parent: A, weight: 30},
          {name: C, parent: A, weight: 10}, {name: E, parent: D, weight: 25},
          {name: F, parent: D, weight: 35}]
cluster_queues:
  - {name: u1, cohort: B, quotas: {f: {gpu: 1}}}
  - {name: u2, cohort: C, quotas: {f: {gpu: 1}}}
  - {name: u3, cohort: C, quotas: {f: {gpu: 1}}}
  - {name: u4, cohort: E, quotas: {f: {gpu: 1}}}
  - {name: u5, cohort: F, quotas: {f: {gpu: 1}}}
fair_sharing: {admission_order: ORDER}
"""
USAGE = {"u1": 0.2, "u2": 0.25, "u4": 0.25}


def _tree(order: str = "slurm-classic") -> Hierarchy:
    return hierarchy(parse_tenants(SLURM_EXAMPLE.replace("ORDER", order)))


def test_slurm_classic_worked_example() -> None:
    factors = classic(_tree(), USAGE, total=1.0)
    assert {u: round(f, 6) for u, f in factors.items()} == {
        "u1": 0.408479, "u2": 0.022097, "u3": 0.125, "u4": 0.5, "u5": 0.749154}


def test_slurm_fair_tree_ranks_accounts_first() -> None:
    """Level FS: D (0.6 / (0.25/0.7)) above A (0.4 / (0.45/0.7)), so D's users rank above A's
    (Fair Tree's guarantee); inside D, F (no usage: infinite) above E; inside A, B above C;
    in C, u3 (no usage) above u2."""
    assert fair_tree(_tree("slurm-fair-tree"), USAGE) == {
        "u5": 1.0, "u4": 0.8, "u1": 0.6, "u3": 0.4, "u2": 0.2}


def test_classic_orders_users_unlike_usage_per_weight() -> None:
    """Usage / weight alone (dlsched's Kueue-order third key) puts u3 and u5 (no usage) first
    and u4 last; Slurm's factor counts the account tree: u3 pays for C's usage, u4 is at its
    share exactly."""
    ranked = sorted(classic(_tree(), USAGE, total=1.0).items(), key=lambda kv: -kv[1])
    assert [u for u, _ in ranked] == ["u5", "u4", "u1", "u3", "u2"]
    by_usage = sorted(["u1", "u2", "u3", "u4", "u5"], key=lambda u: (USAGE.get(u, 0.0), u))
    assert by_usage == ["u3", "u5", "u1", "u2", "u4"]


# Ghodsi et al., "Dominant Resource Fairness", NSDI'11 §4: 9 CPUs and 18 GB; user A's tasks
# need <1 CPU, 4 GB>, B's <3 CPUs, 1 GB>. Progressive filling gives A 3 tasks and B 2
# (A: 3 CPUs, 12 GB; B: 6 CPUs, 2 GB; both dominant shares 2/3). GPUs are not scarce here.
DRF = {"fair_sharing": {"admission_order": "drf"}}


@pytest.mark.parametrize("submit_b_first", [False, True])
def test_drf_progressive_filling(submit_b_first: bool) -> None:
    queues = [{"name": q, "cohort": "co", "quotas": {"f": {"gpu": 8, "cpu": 4.5,
                                                          "memory": 9}}} for q in "AB"]
    text = config_yaml(queues, **DRF)
    offset = (10.0, 0.0) if submit_b_first else (0.0, 10.0)
    waiting = [W(f"A{i}", "A", 1, submit=offset[0] + i, cpus_per_gpu=1, memory_gb=4)
               for i in range(6)]
    waiting += [W(f"B{i}", "B", 1, submit=offset[1] + i, cpus_per_gpu=3, memory_gb=1)
                for i in range(6)]
    got = run_scenario(text, [], waiting, cluster=make_cluster(nodes=2, gpus=8))
    tasks = {user: sum(1 for j in got.admitted if j.startswith(user)) for user in "AB"}
    assert tasks == {"A": 3, "B": 2}
