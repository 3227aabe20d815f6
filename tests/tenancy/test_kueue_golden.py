"""Kueue's rules as whole simulated runs: 2-6 jobs on one or two nodes of 4 GPUs, 2-3 cluster
queues, each case a golden table job -> (first start, finish, preemptions), worked by hand
(no restart overhead; a job's work is its run time on its GPUs). Each case names the rule and
its Kueue source; the one-cycle tables are in ``test_scenarios.py`` and
``test_kueue_rules.py``."""

from __future__ import annotations

from typing import Any

from builders import make_cluster, records_of
from harness import config_yaml, cq

from dlsched.cluster.cluster import Cluster
from dlsched.policies.fifo import fifo
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

ONE_NODE = make_cluster(nodes=1, gpus=4)
LOWER = {"within_cluster_queue": "lower-priority"}


def job(job_id: str, queue: str, submit: float, gpus: int, work: float,
        prio: int = 0) -> JobSpec:
    return JobSpec(job_id, submit, gpus, work, queue=queue, priority=prio)


def run(text: str, jobs: list[JobSpec], cluster: Cluster = ONE_NODE) -> tuple[dict, Any]:
    """Each job's (first start, finish, preemptions), and the run's tenant audit."""
    sim = Simulator(cluster, Trace("t", tuple(jobs)),
                    with_tenants(fifo(strict=False), parse_tenants(text)),
                    SimConfig(restart_overhead=0.0))
    records = records_of(sim)
    plugin = sim.profile.queue_sort
    assert isinstance(plugin, TenantAdmission)
    return ({k: (r.first_start, r.finish_time, r.preemptions) for k, r in records.items()},
            plugin.audit)


def test_strict_fifo_does_not_wait_behind_a_job_backing_off() -> None:
    """Kueue ``pkg/queue/cluster_queue.go`` ``PushOrUpdate``: a workload whose requeue
    backoff has not expired is kept with the inadmissible workloads, out of the heap, so it
    is no head a StrictFIFO queue waits behind. hi (priority 5) evicts lo at t=10; lo backs
    off until 70 (base 60). late (submitted after lo) starts when hi ends at 30, not at 70."""
    text = config_yaml([cq("a", 4, cohort=None, queueing_strategy="StrictFIFO",
                           preemption=LOWER)], requeue={"base_seconds": 60})
    got, _ = run(text, [job("lo", "a", 0, 2, 100), job("hi", "a", 10, 4, 20, prio=5),
                        job("late", "a", 20, 2, 30)], ONE_NODE)
    assert got == {"lo": (0.0, 160.0, 1), "hi": (10.0, 30.0, 0), "late": (30.0, 60.0, 0)}
