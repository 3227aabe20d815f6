"""Prometheus metrics of one service, in a registry of its own (several services, e.g. in tests,
do not collide). Gauges are refreshed from the core when scraped."""

from __future__ import annotations

from collections import Counter as Tally
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from dlsched.cluster.cluster import Cluster

if TYPE_CHECKING:
    from dlsched.scheduling.scheduler import Scheduler

CYCLE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class RuntimeMetrics:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.registry = CollectorRegistry()
        reg = self.registry
        self.queue_length = Gauge("dlsched_queue_length", "Jobs waiting, per queue", ["queue"],
                                  registry=reg)
        self.running = Gauge("dlsched_running_jobs", "Jobs running", registry=reg)
        self.gpus_allocated = Gauge("dlsched_gpus_allocated", "GPUs allocated, per GPU type",
                                    ["gpu_type"], registry=reg)
        self.gpus_total = Gauge("dlsched_gpus", "GPUs in the cluster, per GPU type",
                                ["gpu_type"], registry=reg)
        self.cycle_seconds = Histogram("dlsched_cycle_seconds", "Scheduling-cycle latency",
                                       buckets=CYCLE_BUCKETS, registry=reg)
        self.preemptions = Counter("dlsched_preemptions", "Jobs preempted by the policy",
                                   registry=reg)
        self.resizes = Counter("dlsched_resizes", "Running jobs moved to a new allocation "
                               "(elastic resize)", registry=reg)
        self.submitted = Counter("dlsched_jobs_submitted", "Jobs accepted", registry=reg)
        self.jobs_ended = Counter("dlsched_jobs_ended", "Jobs that ended, per final status",
                                  ["status"], registry=reg)
        self.worker_failures = Counter("dlsched_worker_failures",
                                       "Attempts that ended with a failed worker", registry=reg)
        for name, count in cluster.gpus_by_type().items():
            self.gpus_total.labels(name).set(count)

    def refresh(self, core: Scheduler) -> None:
        """Set the gauges from the core (call under the service lock)."""
        self.queue_length.clear()
        for queue, count in Tally(job.spec.queue for job in core.waiting.values()).items():
            self.queue_length.labels(queue).set(count)
        self.running.set(len(core.running))
        allocated = dict.fromkeys(self.cluster.gpus_by_type(), 0.0)
        for job in core.running.values():
            for gpu, share in zip(job.allocation, job.shares, strict=True):
                node = self.cluster.nodes[int(self.cluster.gpu_node[gpu])]
                allocated[node.gpu_type] += share
        for name, value in allocated.items():
            self.gpus_allocated.labels(name).set(value)

    def render(self) -> bytes:
        return generate_latest(self.registry)
