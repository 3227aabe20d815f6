"""Synergy (OSDI'22) on one node of 2 GPUs, 6 CPUs and 125 GB (3 CPUs, 62.5 GB per GPU), by
hand. Profiles: alexnet's best case is 12 CPUs / 125 GB (capped at the node: 6 CPUs, 125 GB,
T = 1.75); bert's is 1 CPU / 20.83 GB (T = 1 at any point). A (alexnet, 1000 s of work at the
proportional share) and B (bert, 200 s) both arrive at 0. Restart overhead 0.

- proportional: both at 3 CPUs: B ends at 200, A at 1000.
- greedy: A takes 6 CPUs / 125 GB; B's 1 CPU does not fit: skipped beside a free GPU until A
  ends at 1000 / 1.75 = 571.43; B ends at 771.43.
- tune: A first gets its best case, then B (best case 1 CPU, within its share) takes it back:
  A runs at 3 CPUs (T 1) until B ends at 200, then is raised to 6 CPUs / 125 GB (a resize):
  the other 800 s at 1.75: ends at 657.14.
"""

from __future__ import annotations

from collections import Counter

import pytest
from builders import cycle_state, records_of

from dlsched.cluster.cluster import Cluster, Node
from dlsched.errors import ConfigError
from dlsched.policies.synergy import SynergyAllocation
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import HostShare, JobSpec
from dlsched.workload.trace import Trace

NODE = Cluster("one", (Node("n0", "V100", 2, cpus=6, memory_gb=125),))


def run(policy: str, cluster: Cluster = NODE, throughput: str = "synergy") -> Simulator:
    jobs = (JobSpec("A", 0.0, 1, 1000.0, model="alexnet"),
            JobSpec("B", 0.0, 1, 200.0, model="bert"))
    sim = Simulator(cluster, Trace("t", jobs, throughput=throughput), build_policy(policy),
                    SimConfig(restart_overhead=0.0))
    return sim


@pytest.mark.parametrize(("policy", "a_end", "b_end", "b_start"), [
    pytest.param("synergy-proportional", 1000.0, 200.0, 0.0, id="proportional"),
    pytest.param("synergy-greedy", 571.43, 771.43, 571.43, id="greedy-skips"),
    pytest.param("synergy-tune", 657.14, 200.0, 0.0, id="tune"),
])
def test_allocation_rules(policy: str, a_end: float, b_end: float, b_start: float) -> None:
    sim = run(policy)
    records = records_of(sim)
    assert records["A"].finish_time == pytest.approx(a_end, abs=0.01)
    assert records["B"].finish_time == pytest.approx(b_end, abs=0.01)
    assert records["B"].first_start == pytest.approx(b_start, abs=0.01)


def test_tune_takes_back_and_raises() -> None:
    sim = run("synergy-tune")
    records = records_of(sim)
    assert sim.profile.queue_sort.tuned_down == 1
    assert records["A"].resizes == 1  # raised to its best case once B left


def test_needs_the_synergy_model_and_host_resources() -> None:
    with pytest.raises(ConfigError, match="synergy"):
        records_of(run("synergy-tune", throughput="linear"))
    bare = Cluster("bare", (Node("n0", "V100", 2),))
    with pytest.raises(ConfigError, match="cpus and memory_gb"):
        records_of(run("synergy-greedy", cluster=bare))


def test_a_pool_the_cluster_does_not_define_restricts_nothing() -> None:
    """As the core's pool filter: a job pinned to a pool the cluster lacks (a Philly VC on
    another cluster) may use any node; it used none."""
    jobs = (JobSpec("A", 0.0, 1, 1000.0, model="alexnet", queue="vc", pool="vc"),)
    sim = Simulator(NODE, Trace("t", jobs, throughput="synergy"),
                    build_policy("synergy-proportional"), SimConfig(restart_overhead=0.0))
    record = records_of(sim)["A"]
    assert record.first_start == 0.0 and record.finish_time is not None


def test_tune_takes_back_from_single_node_jobs_first() -> None:
    """Synergy-TUNE brings peers down to their proportional share, jobs on the fewest nodes
    first (the artifact's ``_reallocate_peer`` order), then most CPUs per GPU. Two nodes of 4
    GPUs, 12 CPUs (3 per GPU). On n0: "multi" (one worker on each node, 6 CPUs each) and
    "single" (one worker, 5 CPUs); 1 CPU free. A new one-GPU job needs its 3 CPUs on n0:
    bringing "single" down (5 -> 3) frees enough, so "multi" keeps 6 on both nodes. Ordered
    by CPUs alone, "multi" was tuned down and slowed on both its nodes."""
    node = {"cpus": 12, "memory_gb": 500}
    cluster = Cluster("two", (Node("n0", "V100", 4, **node), Node("n1", "V100", 4, **node)))
    plugin = SynergyAllocation("tune")
    ledger = plugin._ledger(cycle_state(cluster))
    ledger.book("multi", Counter({0: 1, 1: 1}), HostShare(6.0, 100.0), True)
    ledger.book("single", Counter({0: 1}), HostShare(5.0, 100.0), True)
    plugin._tune_down(cycle_state(cluster), ledger, Counter({0: 1}), HostShare(3.0, 125.0))
    assert ledger.placed["multi"][1] == HostShare(6.0, 100.0)
    assert ledger.placed["single"][1] == HostShare(3.0, 100.0)
    assert plugin.tuned_down == 1 and ledger.fits_host(Counter({0: 1}), HostShare(3.0, 125.0))
