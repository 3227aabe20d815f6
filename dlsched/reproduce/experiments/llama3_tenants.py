"""The Llama 3 405B case study beside the jobs of a multi-tenant cluster: the 16,384-H100 job
of ``llama3-405b`` (queue ``pretrain``) shares its cluster with a research tenant (queue
``research``) running Philly-like jobs, under Kueue-style quotas (``docs/tenancy.md``): both
queues in one cohort, each may borrow the other's unused quota and reclaim its own. Failures
from the Llama 3 model hit every node, the research jobs' as the pre-training job's.

Assumptions: 64 more H100 nodes (512 GPUs) for the research tenant; its jobs resampled from
``philly-sample`` (``workload/synthetic.py``) at ``research_rate`` jobs an hour (default 23:
~70% of its 512 GPUs at Philly's 15 GPU-hours a job), their work in reference seconds; FIFO
inside each queue. Cases are resilience policies (``scheduling/reconfigure.py``), with the 16
hot spares (``restart``, ``elastic``, ``oobleck``), or without them (``-s0``). Reported for
both sides: the pre-training job's interruptions, ETTR and GPU-hours lost; the research jobs'
count finished, mean JCT, interruptions, reclaims by the pre-training job, GPU-hours lost and
ETTR.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from dlsched.cluster.cluster import Cluster, Node
from dlsched.reproduce.experiments.llama3_405b import (
    DAYS,
    RESILIENCE_CASES,
    STORAGE_GBPS,
    case_cluster,
    interval_for,
    llm_job,
    measured,
    policy_of,
)
from dlsched.reproduce.registry import ExperimentOptions, number_option, register_experiment
from dlsched.reproduce.rows import Measured
from dlsched.sim.result import SimulationResult
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

CASES = ("restart", *RESILIENCE_CASES)
RESEARCH_NODES = 64
RESEARCH_RATE = 23.0  # jobs an hour
TENANTS = """\
flavors:
  - {name: h100, gpu_types: [H100]}
cluster_queues:
  - name: pretrain
    cohort: org
    quotas: {h100: {gpu: 16384}}
    preemption: {reclaim_within_cohort: any}
  - name: research
    cohort: org
    quotas: {h100: {gpu: 512}}
    preemption: {reclaim_within_cohort: any}
"""


def tenant_cluster(spares: int) -> Cluster:
    base = case_cluster(spares)
    research = tuple(Node(f"research-{i:02d}", "H100", 8, 224, 2048, f"research-rack-{i // 8}",
                          8) for i in range(RESEARCH_NODES))
    # the spares stay last: the simulator holds the last ``spares`` nodes back
    nodes = base.nodes[:len(base.nodes) - spares] + research + base.nodes[len(base.nodes)
                                                                        - spares:]
    return Cluster(f"llama3-h100+research+{spares}-spares", nodes, base.topology)


def research_jobs(days: float, rate: float, seed: int) -> tuple[JobSpec, ...]:
    from dlsched.workload.bundled import resolve_trace
    from dlsched.workload.synthetic import generate

    jobs = int(days * 24 * rate)
    if jobs == 0:  # research_rate=0: the pre-training job alone beside an idle tenant
        return ()
    trace = generate(jobs, rate, seed, resolve_trace("philly-sample"))
    return tuple(replace(s, job_id=f"research-{i:05d}", queue="research", pool=None,
                         gpu_types=()) for i, s in enumerate(trace.jobs))


def simulate_tenants(case: str, seed: int, days: float = DAYS, rate: float = RESEARCH_RATE,
                     restart_minutes: float = 10.0) -> SimulationResult:
    from dlsched.perf.llm.throughput import LlmThroughput
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.checkpoint import CheckpointPlan
    from dlsched.sim.failures import DAY, llama3_model
    from dlsched.sim.simulator import SimConfig, Simulator
    from dlsched.tenancy.loader import parse_tenants
    from dlsched.tenancy.profile import with_tenants

    interval_case, policy, spares = case_policy(case)
    plan = CheckpointPlan(interval_for(interval_case), storage_gbps=STORAGE_GBPS)
    config = SimConfig(restart_overhead=restart_minutes * 60, max_time=days * DAY, seed=seed,
                       failures=llama3_model(), checkpoint=plan, hot_spares=spares,
                       resilience=policy)
    specs = (replace(llm_job(), queue="pretrain"), *research_jobs(days, rate, seed))
    profile = with_tenants(build_policy("fifo"), parse_tenants(TENANTS, "llama3-tenants"))
    sim = Simulator(tenant_cluster(spares), Trace("llama3-405b+research", specs,
                                                  throughput="llm"),
                    profile, config, throughput=LlmThroughput())
    return sim.run()


@register_experiment(
    "llama3-405b-tenants", "Llama 3 405B beside a research tenant's Philly-like jobs under "
    "quotas, failures hitting both: each side's ETTR, interruptions and GPU-hours lost, by "
    "resilience policy", cases=CASES,
    default_cases=("restart", "elastic", "oobleck"),
    options={"days": f"simulated days (default {DAYS})",
             "research_rate": f"research jobs an hour (default {RESEARCH_RATE:g})"},
    seeded=True)
def llama3_tenants(options: ExperimentOptions) -> Iterator[Measured]:
    days = number_option(options.options, "days", DAYS, above=True)
    rate = number_option(options.options, "research_rate", RESEARCH_RATE)
    for case in options.cases:
        for seed in options.seeds or (0,):
            result = simulate_tenants(case, seed, days, rate)
            name = f"{case}@seed{seed}" if options.seeds else case
            policy = case_policy(case)[1]
            yield from measured(name, result, policy, days)
            yield from research_side(name, result, policy)


def case_policy(case: str) -> tuple[str, str, int]:
    """``restart``: Young's interval, restart, the spares; else as ``llama3-405b``'s cases."""
    return policy_of("young" if case == "restart" else case)


def research_side(case: str, result: SimulationResult, policy: str) -> Iterator[Measured]:
    jobs = [j for j in result.jobs if j.job_id.startswith("research-")]
    done = [j for j in jobs if j.finish_time is not None and j.status == "finished"]
    jct = [j.finish_time - j.submit_time for j in done if j.finish_time is not None]
    useful = elapsed = 0.0
    for j in jobs:
        if j.first_start is not None:
            end = j.finish_time if j.finish_time is not None else result.end_time
            useful += j.useful_seconds * j.num_gpus
            elapsed += (end - j.first_start) * j.num_gpus
    yield Measured(case, policy, "research_jobs", float(len(jobs)))
    yield Measured(case, policy, "research_finished", float(len(done)))
    yield Measured(case, policy, "research_jct_mean_h",
                   sum(jct) / len(jct) / 3600 if jct else None)
    yield Measured(case, policy, "research_interruptions", float(sum(j.failures for j in jobs)))
    yield Measured(case, policy, "research_preemptions",  # reclaims by the pre-training job
                   float(sum(j.preemptions for j in jobs)))
    yield Measured(case, policy, "research_lost_gpu_hours",
                   sum(j.lost_gpu_seconds for j in jobs) / 3600)
    yield Measured(case, policy, "research_ettr", useful / elapsed if elapsed else None)
