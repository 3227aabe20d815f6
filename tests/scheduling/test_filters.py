"""Filters: a node type on which the throughput model says a job cannot run is never used."""

from __future__ import annotations

from builders import cluster_of, make_job, records_of

from dlsched.cluster.cluster import Node
from dlsched.perf.model import Placement
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace


class NoMultiWorkerOnK80:
    """1 work unit/s per worker, except that 2+ workers cannot run on K80 (rate 0)."""

    name = "test-k80"

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        if placement.num_workers > 1 and "K80" in placement.gpu_types:
            return 0.0
        return placement.num_workers / spec.num_gpus

    def reference_rate(self, spec: JobSpec) -> float:
        return 1.0


def test_multi_worker_job_avoids_a_type_where_only_one_worker_can_run() -> None:
    # The K80 node comes first, so consolidated placement would pick it for both jobs; the
    # 2-worker job must go to the V100 node instead and finish (it would run forever on K80).
    cluster = cluster_of(Node("k80", "K80", 4), Node("v100", "V100", 4))
    jobs = (make_job("one").gpus(1).work(10).build(), make_job("two").gpus(2).work(10).build())
    sim = Simulator(cluster, Trace("t", jobs), build_policy("fifo"),
                    SimConfig(restart_overhead=0.0), throughput=NoMultiWorkerOnK80())
    records = records_of(sim)
    assert records["two"].finish_time == 10.0
    assert records["one"].finish_time == 10.0
