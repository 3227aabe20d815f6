"""Llama 3 405B's pre-training as a failure case study (Llama Team, "The Llama 3 Herd of
Models", 2024, §3.3.4): a 16,384-H100 job for 54 days under the failure model fitted to its
419 unexpected interruptions (``sim/failures.py``), checkpointing at a rule's interval, on
the ``llama3-h100`` cluster plus hot-spare nodes. Measured: interruptions (all and by cause),
effective training time ratio, GPU-hours lost per cause, and the checkpoint interval.

Assumptions (the paper does not give them): a checkpoint is 14 bytes a parameter (bf16
weights, fp32 master weights and Adam moments) written at Tectonic's sustained 2 TB/s
(§3.3.1), so ~2.8 s; a restart reloads for ``restart_minutes`` (10); 16 hot-spare nodes; repair
times as in ``sim/failures.py``. Cases are checkpoint-interval rules; ``young-x4`` is Young's
interval times 4 (too long), ``young-x0.25`` a quarter.

Resilience cases (Young's interval; ``scheduling/reconfigure.py`` has the rules):
``restart-s0``, ``elastic-s0``, ``oobleck-s0`` without hot spares (restart then waits for the
repair), ``elastic`` and ``oobleck`` with the spares (a spare first, the policy when none is
left). ``wall_days`` is the wall time the simulated failure-free days of training take (54, or
``--opt days`` in the tenants experiment, over ETTR).
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from dlsched.cluster.builtin import resolve_cluster
from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.llm.models import BUILTIN_MODELS
from dlsched.reproduce.registry import (
    ExperimentOptions,
    number_option,
    register_experiment,
    whole_option,
)
from dlsched.reproduce.rows import Measured
from dlsched.scheduling.registry import build_policy
from dlsched.sim.checkpoint import CheckpointPlan, young
from dlsched.sim.failures import DAY, llama3_model
from dlsched.sim.result import SimulationResult
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace

INTERVAL_CASES = ("young", "daly", "adaptive", "young-x0.25", "young-x4")
RESILIENCE_CASES = ("restart-s0", "elastic-s0", "oobleck-s0", "elastic", "oobleck")
CASES = INTERVAL_CASES + RESILIENCE_CASES
POLICY = "restart"  # restart on the same size (on a spare, else after repair)
DAYS = 54
STORAGE_GBPS = 2000.0  # Tectonic, Llama 3 §3.3.1
SPARES = 16


def case_cluster(spares: int) -> Cluster:
    base = resolve_cluster("llama3-h100")
    extra = tuple(Node(f"spare-{i:02d}", "H100", 8, 224, 2048, f"spare-rack-{i // 2}", 8)
                  for i in range(spares))
    return Cluster(f"llama3-h100+{spares}-spares", base.nodes + extra, base.topology)


def llm_job() -> JobSpec:
    return JobSpec("llama3-405b", 0.0, 16384, work=1e12, work_unit=WorkUnit.ITERATIONS,
                   gpu_types=("H100",), model="llama3-405b",
                   tensor_parallel=8)  # Llama 3 (Dubey et al. 2024), Table 4: TP 8 in a node


def interval_for(case: str) -> str | float:
    if not case.startswith("young-x"):
        return case
    delta = 14.0 * BUILTIN_MODELS["llama3-405b"].params / (STORAGE_GBPS * 1e9)
    mtbf = llama3_model().mtbf_seconds(16384)
    return young(delta, mtbf) * float(case.removeprefix("young-x"))


def policy_of(case: str, spares: int = SPARES) -> tuple[str, str, int]:
    """A case's checkpoint-interval case, resilience policy and hot spares."""
    if case not in RESILIENCE_CASES:
        return case, POLICY, spares
    policy, _, without = case.partition("-")
    return "young", policy, 0 if without == "s0" else spares


def simulate_case(case: str, seed: int, restart_minutes: float = 10.0,
                  spares: int = SPARES, days: float = DAYS) -> SimulationResult:
    from dlsched.perf.llm.throughput import LlmThroughput

    interval_case, policy, spares = policy_of(case, spares)
    plan = CheckpointPlan(interval_for(interval_case), storage_gbps=STORAGE_GBPS)
    config = SimConfig(restart_overhead=restart_minutes * 60, max_time=days * DAY, seed=seed,
                       failures=llama3_model(), checkpoint=plan, hot_spares=spares,
                       resilience=policy)
    trace = Trace("llama3-405b-54d", (llm_job(),), throughput="llm")
    sim = Simulator(case_cluster(spares), trace, build_policy("fifo"), config,
                    throughput=LlmThroughput())
    return sim.run()


@register_experiment(
    "llama3-405b", "Llama 3 405B on 16,384 H100 for 54 days: interruptions, ETTR and GPU-hours "
    "lost under the Llama 3 failure model, by checkpoint interval and resilience policy",
    cases=CASES, default_cases=INTERVAL_CASES,
    options={"restart_minutes": "minutes a restart takes (default 10)",
             "spares": f"hot-spare nodes (default {SPARES})"}, seeded=True)
def llama3_405b(options: ExperimentOptions) -> Iterator[Measured]:
    restart = number_option(options.options, "restart_minutes", 10.0)
    spares = whole_option(options.options, "spares", SPARES, minimum=0)
    for case in options.cases:
        for seed in options.seeds or (0,):
            result = simulate_case(case, seed, restart, spares)
            yield from measured(f"{case}@seed{seed}" if options.seeds else case, result,
                                policy_of(case)[1])


def measured(case: str, result: SimulationResult, policy: str = POLICY,
             days: float = DAYS) -> Iterator[Measured]:
    """The Llama job's rows; ``wall_days``: the ``days`` of training it had at the run's
    ETTR (54 days in the paper's setting)."""
    job = next(j for j in result.jobs if j.job_id == "llama3-405b")
    elapsed = result.end_time - (job.first_start or 0.0)
    ettr = job.useful_seconds / elapsed if elapsed else None
    yield Measured(case, policy, "unexpected_interruptions", float(job.failures))
    yield Measured(case, policy, "ettr", ettr)
    yield Measured(case, policy, "wall_days", days / ettr if ettr else None)
    yield Measured(case, policy, "mean_gpus", job.gpu_seconds / elapsed if elapsed else None)
    yield Measured(case, policy, "lost_gpu_hours", job.lost_gpu_seconds / 3600)
    yield Measured(case, policy, "checkpoint_gpu_hours", job.checkpoint_gpu_seconds / 3600)
    yield Measured(case, policy, "restart_gpu_hours", job.restart_gpu_seconds / 3600)
    for category, count in result.failures_by_category:
        yield Measured(case, policy, f"failures_{category}", float(count))
    for category, seconds in result.lost_by_category:
        yield Measured(case, policy, f"lost_gpu_hours_{category}", seconds / 3600)
    interval = interval_for(policy_of(case.split("@")[0])[0])
    if isinstance(interval, float) and not math.isinf(interval):
        yield Measured(case, policy, "checkpoint_interval_s", interval)
