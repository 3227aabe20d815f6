"""Tiresias' starvation promotion under tenants: a waiting job promoted to queue 0 moves up in
its cluster queue's line (``WaitingLines.refile`` with the policy's ``key_changes``), as it
does in the core's own sorted queue. On random contended workloads the schedule is that of the
same run with every line rebuilt from the policy's keys in each cycle; lines that kept a
promoted job at its old place (the tenant layer asking no ``key_changes``) fail here."""

from __future__ import annotations

import random

import pytest
from harness import cohort_yaml

from dlsched.cluster.cluster import Cluster, Node
from dlsched.policies.tiresias import tiresias
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace


def _trace(seed: int, jobs: int) -> Trace:
    rng = random.Random(seed)
    specs, now = [], 0.0
    for i in range(jobs):
        now += rng.expovariate(1 / 30.0)
        specs.append(JobSpec(f"j{i}", round(now, 1), rng.choice((1, 1, 1, 2, 2, 4, 8)),
                             rng.uniform(200, 4000),
                             queue=rng.choice(("q0", "q1", "q2", "q3", "team-x"))))
    return Trace("random", tuple(specs))


def _run(seed: int, tight: bool, rebuilt: bool) -> tuple[list[str], int]:
    text = cohort_yaml((8, 4, 8, 0) if tight else (16, 16, 16, 8))
    profile = with_tenants(tiresias(thresholds=(1200.0,), promote_knob=1.0),
                           parse_tenants(text))
    admission = profile.queue_sort
    assert isinstance(admission, TenantAdmission) and admission.lines.static
    if rebuilt:  # every line sorted afresh by the policy's keys each cycle
        admission.lines.static = admission._submission_order = admission.by_groups = False
        admission.lines.on_join = admission.lines.on_leave = None
    cluster = Cluster("t", tuple(Node(f"n{i}", "V100", 4) for i in range(4)))
    sim = Simulator(cluster, _trace(seed, 120), profile, SimConfig())
    inner = next(p.inner for p in sim.core.profile.plugins if hasattr(p, "inner")
                 and hasattr(p.inner, "key_changes"))
    result = sim.run()
    return sorted(map(repr, result.jobs)), len(inner._promoted) + len(inner._offsets)


@pytest.mark.parametrize(("seed", "tight"), [(0, False), (1, True), (2, True)])
def test_promoted_jobs_move_up_in_the_tenant_lines(seed: int, tight: bool) -> None:
    jobs, promoted = _run(seed, tight, rebuilt=False)
    want, _ = _run(seed, tight, rebuilt=True)
    assert jobs == want
    assert promoted > 0  # promotions happened: the comparison is not vacuous
