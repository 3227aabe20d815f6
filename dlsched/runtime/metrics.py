"""Prometheus metrics of one service, in a registry of its own (several services, e.g. in tests,
do not collide). Gauges are refreshed from the core when scraped; the GPU gauges are
``usage.py``'s accounting, the same as ``GET /v1/cluster``'s."""

from __future__ import annotations

from collections import Counter as Tally
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from dlsched.cluster.cluster import Cluster
from dlsched.runtime.usage import gpu_usage

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
        self.gpus_allocated = Gauge("dlsched_gpus_allocated", "GPUs allocated, per GPU type "
                                    "(a worker counts its share: a fraction, MIG slices / 7)",
                                    ["gpu_type"], registry=reg)
        self.gpus_in_use = Gauge("dlsched_gpus_in_use", "GPUs holding a worker, whole or in "
                                 "part, per GPU type", ["gpu_type"], registry=reg)
        self.gpus_partly_used = Gauge("dlsched_gpus_partly_used", "GPUs holding workers with "
                                      "compute left over (fractions, MIG), per GPU type",
                                      ["gpu_type"], registry=reg)
        self.mig_slices_used = Gauge("dlsched_mig_slices_used", "MIG compute slices held, per "
                                     "GPU type", ["gpu_type"], registry=reg)
        self.mig_slices = Gauge("dlsched_mig_slices", "MIG compute slices of the MIG-capable "
                                "GPUs (7 each), per GPU type", ["gpu_type"], registry=reg)
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
        for name, usage in gpu_usage(self.cluster, list(core.running.values())).items():
            self.gpus_allocated.labels(name).set(usage.allocated)
            self.gpus_in_use.labels(name).set(usage.in_use)
            self.gpus_partly_used.labels(name).set(usage.partly_used)
            self.mig_slices_used.labels(name).set(usage.mig_slices_used)
            self.mig_slices.labels(name).set(usage.mig_slices)

    def render(self) -> bytes:
        return generate_latest(self.registry)
