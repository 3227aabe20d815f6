"""GPU-seconds in use per GPU type, recorded at the executor seam of a simulator.

The core's ``Timeline`` keeps only the cluster-wide count of GPUs in use. Until it keeps one
series per GPU type, ``TypeUsage.attach(sim)`` wraps the simulator's executor: every start opens
an interval per GPU type of the job's allocation, every stop closes it. The core does not call
``Executor.stop`` when a job finishes, so ``close(sim)`` ends the intervals still open at each
job's finish time (or at the end of the simulation for jobs still running). Restart overhead
counts as in use, as in the timeline.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from dlsched.cluster.cluster import Cluster
from dlsched.report.fairness import FairnessInputs
from dlsched.scheduling.interfaces import Executor
from dlsched.sim.simulator import Simulator
from dlsched.workload.job import Job


@dataclass
class TypeUsage:
    """An executor wrapper that sums GPU-seconds (shares included) per GPU type."""

    inner: Executor
    cluster: Cluster
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    _open: dict[str, tuple[float, Counter[str]]] = field(default_factory=dict)

    @classmethod
    def attach(cls, sim: Simulator) -> TypeUsage:
        """Wrap ``sim``'s executor (before ``sim.run()``); returns the recorder."""
        usage = cls(sim.core.executor, sim.cluster)
        sim.core.executor = usage
        return usage

    def start(self, job: Job, now: float) -> None:
        node_of, nodes = self.cluster.gpu_node, self.cluster.nodes
        by_type: Counter[str] = Counter()
        for gpu, share in zip(job.allocation, job.shares, strict=True):
            by_type[nodes[int(node_of[gpu])].gpu_type] += share
        self._open[job.job_id] = (now, by_type)
        self.inner.start(job, now)

    def stop(self, job: Job, now: float) -> None:
        self._close(job.job_id, now)
        self.inner.stop(job, now)

    def _close(self, job_id: str, now: float) -> None:
        opened = self._open.pop(job_id, None)
        if opened is None:
            return
        since, by_type = opened
        for name, gpus in by_type.items():
            self.seconds[name] += gpus * max(0.0, now - since)

    def close(self, sim: Simulator) -> None:
        """End open intervals: finished jobs at their finish time, others at the clock."""
        for job_id in list(self._open):
            job = sim.core.jobs[job_id]
            end = job.finish_time if job.finish_time is not None else sim.clock.time
            self._close(job_id, end)

    def inputs(self, isolated: dict[str, float]) -> FairnessInputs:
        """``FairnessInputs`` with this run's per-type GPU-seconds and the cluster's GPU counts."""
        return FairnessInputs(isolated, dict(self.seconds), self.cluster.gpus_by_type())
