"""Synergy-OPT (OSDI'22 §4.2), hand-checked on one server of 2 GPUs, 6 CPUs and 125 GB (the
GPU-proportional share: 3 CPUs, 62.5 GB per GPU). AlexNet speeds up with CPUs (0.3, 0.66, 1.0,
1.25, 1.53, 1.75 at 1-6 CPUs with >= 62.5 GB; 2.94 only with 12 CPUs and 125 GB); GNMT runs at
1.0 with anything. The LP gives GNMT the least (1 CPU, 20.83 GB) and AlexNet the rest of the
CPUs: 5 CPUs with 62.5 GB (1.53; a mix towards 12 CPUs is worse at a mean of 5 CPUs:
1.25 + (2.94 - 1.25) / 8 = 1.46). Proportional gives both 3 CPUs (AlexNet 1.0)."""

from __future__ import annotations

import pytest

from dlsched.cluster.cluster import Cluster, Node
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

SERVER = Cluster("one", (Node("s0", "V100", 2, cpus=6, memory_gb=125),))


def run(policy: str) -> Simulator:
    jobs = (JobSpec("A", 0.0, 1, 1530.0, model="alexnet"),
            JobSpec("B", 0.0, 1, 500.0, model="gnmt"))
    sim = Simulator(SERVER, Trace("t", jobs, throughput="synergy"), build_policy(policy),
                    SimConfig(restart_overhead=0.0))
    sim.run()
    return sim


def test_opt_gives_the_cpu_hungry_job_what_the_other_does_not_need() -> None:
    """A runs at 1.53 beside B (765 s of work by 500 s, when B ends), then the next LP gives
    it all 6 CPUs (1.75; a resize, restart overhead 0 here): 500 + 765 / 1.75 = 937.14 s."""
    sim = run("synergy-opt")
    a, b = sim.core.jobs["A"], sim.core.jobs["B"]
    assert b.finish_time == pytest.approx(500.0)
    # (the LP keeps 1e-5 of each server's CPUs free: its solver's tolerance)
    assert a.finish_time == pytest.approx(500.0 + 765.0 / 1.75, rel=1e-5)
    assert a.host is not None and a.resizes == 1
    assert (a.host.cpus, a.host.memory_gb) == pytest.approx((6.0, 62.5), abs=1e-4)


def test_opt_hosts_by_hand() -> None:
    import numpy as np

    from dlsched.perf.synergy import SynergyThroughputs
    from dlsched.policies.synergy_opt import SynergyOptAllocation
    from dlsched.scheduling.state import ClusterSnapshot, CycleState, whole_free_per_node
    from dlsched.workload.job import Job

    waiting = (Job(JobSpec("A", 0.0, 1, 1.0, model="alexnet")),
               Job(JobSpec("B", 0.0, 1, 1.0, model="gnmt")))
    free = np.ones(2)
    snapshot = ClusterSnapshot(SERVER, 0.0, free, whole_free_per_node(SERVER, free),
                               np.zeros(1, dtype=np.int64), (), waiting, SynergyThroughputs())
    targets = SynergyOptAllocation().allocate(CycleState.begin(snapshot))
    hosts = {j: (t.host.cpus, t.host.memory_gb) for j, t in targets.items()
             if t.host is not None}
    assert hosts["A"] == pytest.approx((5.0, 62.5), abs=1e-4)
    assert hosts["B"] == pytest.approx((1.0, 20.83), abs=1e-4)


def test_proportional_for_comparison() -> None:
    sim = run("synergy-proportional")  # 3 CPUs each: AlexNet at 1.0 all along
    assert sim.core.jobs["A"].finish_time == pytest.approx(1530.0)
