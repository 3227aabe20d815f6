"""Builders for the report tests: the tiny 4-job trace on two 4-GPU nodes, hand-made results.

A uniquely named module rather than conftest.py, so ``import`` cannot pick up another folder's
conftest."""

from __future__ import annotations

from collections.abc import Sequence

from dlsched.cluster.cluster import Cluster, Node
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.timeline import Timeline
from dlsched.sim import SimConfig, simulate
from dlsched.sim.result import JobRecord, RunInfo, SimulationResult
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

# The keys of summary.json that scripts rely on, written out rather than read from Summary.
CONTRACT_KEYS = {
    "policy", "trace", "cluster", "seed", "version", "jobs_submitted", "jobs_finished",
    "jobs_unfinished", "jct_mean", "jct_median", "jct_p95", "jct_p99", "queueing_delay_mean",
    "queueing_delay_p99", "makespan", "utilization", "preemptions", "gpu_hours", "cycles",
    "cycle_ms_mean", "wall_seconds", "policy_options", "placement", "restart_overhead",
}

# Added with the fairness metrics (fairness.py): new keys, the old ones unchanged.
FAIRNESS_KEYS = {"ftf_rho_max", "ftf_rho_mean", "ftf_rho_above_1", "jain_tenants",
                 "utilization_by_type"}

# Added with the elastic and deadline metrics (metrics.py).
ELASTIC_KEYS = {"deadline_jobs", "deadline_satisfaction", "resizes",
                # failures and checkpoints (docs/llm.md)
                "node_failures", "job_interruptions", "lost_gpu_hours", "checkpoint_gpu_hours",
                "restart_gpu_hours", "ettr", "failures_without_spare",
                # every wait, those after preemptions included (metrics.total_waits)
                "wait_total_mean", "wait_total_p99"}

TINY_JOBS = (JobSpec("a", 0, 8, 100), JobSpec("b", 1, 4, 10), JobSpec("c", 2, 4, 50),
             JobSpec("d", 3, 1, 5))


def run_tiny(policy: str) -> SimulationResult:
    cluster = Cluster("two-nodes", tuple(Node(f"n{i}", "V100", 4) for i in range(2)))
    return simulate(cluster, Trace("tiny", TINY_JOBS), build_policy(policy),
                    SimConfig(restart_overhead=0))


def job(job_id: str, submit: float, start: float | None, finish: float | None,
        queue: str = "default", gpus: int = 1, preemptions: int = 0, *, resizes: int = 0,
        deadline: float | None = None, status: str | None = None) -> JobRecord:
    """A hand-made record; status follows from the times (unless given), GPU-seconds from
    start to finish."""
    if status is None:
        status = ("finished" if finish is not None
                  else "running" if start is not None else "pending")
    busy = 0.0 if start is None or finish is None else (finish - start) * gpus
    return JobRecord(job_id, queue, gpus, submit, start, finish, status, preemptions, busy,
                     0.0, 1.0, "", resizes, deadline)


def hand_result(jobs: Sequence[JobRecord], times: Sequence[float] = (),
                used: Sequence[float] = (), total_gpus: int = 4,
                end_time: float = 0.0) -> SimulationResult:
    """A result built by hand: waiting and running are left at zero."""
    timeline = Timeline(list(times), list(used), [0] * len(times), [0] * len(times))
    info = RunInfo("hand", "hand-trace", "hand-cluster", 7, "0.0.0")
    return SimulationResult(info, tuple(jobs), timeline, total_gpus, cycles=0, cycle_seconds=0.0,
                            wall_seconds=0.5, end_time=end_time)
