"""Every registered policy runs inside the tenant model (issue 6): on two queues of nominal 4
GPUs each (no cohort) on 16 GPUs, no queue ever holds more than its quota after a cycle, the
run ends (a rigid job larger than its queue's quota never starts: the simulator stops once
nothing runs and nothing can start), and the 1-GPU jobs, which always fit, finish."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import pytest

from dlsched.cluster.cluster import Cluster, Node
from dlsched.scheduling.registry import build_policy, policies
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.bundled import resolve_trace

TENANTS = parse_tenants("""
flavors: [{name: t4}]
cluster_queues:
  - {name: a, quotas: {t4: {gpu: 4}}}
  - {name: b, quotas: {t4: {gpu: 4}}}
""")
CLUSTER = Cluster("c", tuple(Node(f"n{i}", "T4", 4) for i in range(4)))
# pollux-1's first 8 jobs (6, 6, 1, 12, 16, 1, 1, 1 GPUs), alternately in queues b and a.
TRACE = resolve_trace("pollux-1")
TRACE = replace(TRACE, jobs=tuple(replace(s, queue="ab"[i % 2]) for i, s in
                                  enumerate(TRACE.jobs[:8])))
# Space sharing needs Gavel's pair measurements, which the goodput model does not have;
# Synergy's policies need its CPU/memory profiles and nodes with CPUs and memory.
NEEDS_GAVEL_TABLE = {"gavel-maxmin-packed", "synergy-proportional", "synergy-greedy",
                     "synergy-tune", "synergy-opt"}
OPTIONS = {"gavel-cost": {"type_prices": "T4=0.5"}}  # any price per GPU type


@pytest.mark.parametrize("policy", sorted(set(policies()) - NEEDS_GAVEL_TABLE))
def test_every_policy_keeps_each_queue_within_its_quota(policy: str) -> None:
    profile = with_tenants(build_policy(policy, OPTIONS.get(policy)), TENANTS)
    sim = Simulator(CLUSTER, TRACE, profile, SimConfig(stall_cycles=50))
    most: dict[str, float] = defaultdict(float)
    cycle = sim.core.cycle

    def watched():  # type: ignore[no-untyped-def]
        result = cycle()
        held: dict[str, float] = defaultdict(float)
        for job in sim.core.running.values():
            held[job.spec.queue] += sum(job.shares)
        for queue, gpus in held.items():
            most[queue] = max(most[queue], gpus)
        return result

    sim.core.cycle = watched  # type: ignore[method-assign]
    result = sim.run()
    assert max(most.values()) <= 4.0
    status = {j.job_id: j.status for j in result.jobs}
    assert all(status[s.job_id] == "finished" for s in TRACE.jobs if s.num_gpus == 1)
