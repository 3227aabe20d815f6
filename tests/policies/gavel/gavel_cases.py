"""Small allocation problems for the Gavel solver tests: hand cases and seeded random ones."""

from __future__ import annotations

import numpy as np

from dlsched.cluster.builtin import resolve_cluster
from dlsched.cluster.cluster import Cluster
from dlsched.perf.gavel_table import job_types
from dlsched.policies.gavel.inputs import from_gavel
from dlsched.policies.gavel.problem import AllocationProblem, Colocation
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace


def problem(throughput, counts, scale=None, **fields) -> AllocationProblem:
    """A problem with job ids ``j0..``, types ``slow``, ``fast`` (or ``t0..`` beyond two)."""
    throughput = np.asarray(throughput, dtype=float)
    n, types = throughput.shape
    names = ("slow", "fast") if types == 2 else tuple(f"t{t}" for t in range(types))
    return AllocationProblem(tuple(f"j{j}" for j in range(n)), names, np.asarray(counts, float),
                             throughput, np.ones(n) if scale is None else scale, **fields)


def random_problem(seed: int, n_jobs: int | None = None) -> AllocationProblem:
    """Random throughputs (some 0), scale factors, capacities, job state and colocation."""
    rng = np.random.default_rng(seed)
    n = n_jobs or int(rng.integers(1, 25))
    types = int(rng.integers(1, 4))
    throughput = rng.uniform(0.2, 10.0, (n, types)) * (rng.random((n, types)) > 0.2)
    throughput[np.arange(n), rng.integers(types, size=n)] += 0.5  # every job runs somewhere
    classes = int(rng.integers(1, 5))
    rates = rng.uniform(0.1, 0.9, (types, classes, classes)) * (rng.random((types, classes,
                                                                           classes)) > 0.3)
    return problem(
        throughput, rng.uniform(0.5, 8.0, types).round(1), scale=rng.choice([1, 1, 2, 4], n),
        weights=rng.choice([1.0, 2.0], n), remaining=rng.uniform(100, 1e4, n),
        elapsed=rng.uniform(0, 1e3, n) * (rng.random(n) < 0.5),
        attained=rng.uniform(0, 1e4, n) * (rng.random(n) < 0.5),
        tenant=rng.integers(2, size=n), tenant_weights=np.array([1.0, 3.0]),
        colocation=Colocation(rng.integers(classes, size=n), rates * throughput.mean()))


def gavel_specs(n_jobs: int, seed: int) -> list[JobSpec]:
    """Gavel-style jobs: a uniform job type, scale factor 1/2/4/8 w.p. 70/10/15/5%."""
    rng = np.random.default_rng(seed)
    kinds = job_types()
    specs = []
    for i in range(n_jobs):
        model, batch = kinds[rng.integers(len(kinds))]
        gpus = int(rng.choice([1, 2, 4, 8], p=[0.7, 0.1, 0.15, 0.05]))
        specs.append(JobSpec(f"job{i}", 0.0, gpus, float(rng.uniform(1e3, 1e5)),
                             WorkUnit.ITERATIONS, model=model, batch_size=batch))
    return specs


def gavel_problem(n_jobs: int, seed: int = 0) -> AllocationProblem:
    """``n_jobs`` Gavel-style jobs on ``n_jobs / 3`` GPUs of each of K80, P100, V100."""
    rng = np.random.default_rng(seed + 1)
    per_type = n_jobs / 3
    return from_gavel(gavel_specs(n_jobs, seed), {"k80": per_type, "p100": per_type,
                                                  "v100": per_type},
                      elapsed=rng.uniform(0, 3600, n_jobs) * (rng.random(n_jobs) < 0.5))


def artifact_sim(policy: str, trace: Trace, cluster: Cluster | None = None) -> Simulator:
    """A simulator of ``policy`` with Gavel's simulator rounds (``mechanism=artifact``) as
    gavel-osdi20 sets them: 360 s rounds only, no restart overhead; on ``gavel-108`` unless
    ``cluster`` is given. Not run yet (a test may patch before it runs)."""
    return Simulator(cluster or resolve_cluster("gavel-108"), trace,
                     build_policy(policy, {"mechanism": "artifact"}),
                     SimConfig(restart_overhead=0.0, round_seconds=360.0, rounds_only=True))
