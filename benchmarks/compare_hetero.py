"""Heterogeneity-aware and fairness policies on gavel-108 (36 K80, 36 P100, 36 V100).

Run on demand: ``python benchmarks/compare_hetero.py [--jobs 150] [--seed 0] [--out DIR]``.
Two workloads, both Gavel-style (Narayanan et al., OSDI'20 §7.1: job shapes from a source,
Poisson arrivals):

- ``gavel-synthetic``: jobs resampled from the bundled Gavel trace (``gavel-max-min-fairness``)
  with ``dlsched.workload.synthetic.generate``;
- ``philly-gavel``: Philly jobs (``philly-sample``) mapped to Gavel job types by Gavel's rule
  (``workload/readers/gavel_mapping.py``), then resampled the same way.

Policies: gavel-maxmin-agnostic, gavel-maxmin, gavel-maxmin-packed, gavel-las, gavel-ftf,
themis, gandiva (with packing). For each run it
prints mean JCT and makespan (hours), finish-time fairness ρ (max, mean, % above 1: Themis' ρ
with contention from the run's timeline, ``dlsched/report/fairness.py``) and utilization per GPU
type, and writes ``DIR/<workload>/report.html`` plus each run's files. The offered load printed
is arrivals/hour x mean GPU-hours a job needs on its fastest type / 108 GPUs. Philly's
durations are heavy-tailed (a few jobs of weeks carry most of the GPU-hours), so its offered load
overstates how often the cluster is contended: most jobs never wait, and the policies differ
mainly in where the few giant jobs run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dlsched.cluster.builtin import resolve_cluster
from dlsched.perf.model import get_throughput_model
from dlsched.report.fairness import FairnessInputs, isolated_seconds
from dlsched.report.html import write_report
from dlsched.report.metrics import Summary, summarize
from dlsched.report.output import write_run
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.readers.gavel_mapping import to_gavel_types
from dlsched.workload.synthetic import generate
from dlsched.workload.trace import Trace

POLICIES = ("gavel-maxmin-agnostic", "gavel-maxmin", "gavel-maxmin-packed", "gavel-las",
            "gavel-ftf", "themis", "gandiva")
CLUSTER = "gavel-108"


def workloads(jobs: int, seed: int, rates: tuple[float, float]) -> dict[str, Trace]:
    gavel = resolve_trace("gavel-max-min-fairness")
    philly = to_gavel_types(resolve_trace("philly-sample"), seed)
    return {"gavel-synthetic": generate(jobs, rates[0], seed, gavel),
            "philly-gavel": generate(jobs, rates[1], seed, philly)}


def offered_load(trace: Trace, rate_per_hour: float, gpus: int) -> float:
    model = get_throughput_model(trace.throughput)
    hours = [spec.num_gpus * seconds / 3600 for spec, seconds in
             zip(trace.jobs, isolated_seconds(trace, model).values(), strict=True)]
    return rate_per_hour * sum(hours) / len(hours) / gpus


def run_one(trace: Trace, policy: str, out: Path) -> tuple[Summary, object, object]:
    cluster = resolve_cluster(CLUSTER)
    sim = Simulator(cluster, trace, build_policy(policy), SimConfig(seed=0))
    started = time.perf_counter()
    result = sim.run()
    inputs = FairnessInputs.of_run(result, isolated_seconds(trace, sim.core.throughput), cluster)
    write_run(result, out / policy, fairness=inputs)
    print(f"    ({policy}: {time.perf_counter() - started:.1f} s wall)", flush=True)
    return summarize(result, inputs), result, inputs


def row(s: Summary) -> str:
    by_type = " ".join(f"{name} {100 * u:5.1f}" for name, u in s.utilization_by_type)
    return (f"{s.policy:>22} {s.jct_mean / 3600:9.2f} {s.makespan / 3600:9.2f} "
            f"{s.ftf_rho_max:7.2f} {s.ftf_rho_mean:7.2f} {100 * s.ftf_rho_above_1:6.1f} "
            f"{s.jobs_finished:5d}  {by_type}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--gavel-rate", type=float, default=25.0, help="jobs/hour")
    parser.add_argument("--philly-rate", type=float, default=10.0, help="jobs/hour")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--out", default="runs/compare_hetero")
    args = parser.parse_args()
    rates = (args.gavel_rate, args.philly_rate)
    for (name, trace), rate in zip(workloads(args.jobs, args.seed, rates).items(), rates,
                                   strict=True):
        load = offered_load(trace, rate, resolve_cluster(CLUSTER).num_gpus)
        print(f"{name}: {len(trace)} jobs, {rate:g} jobs/h, offered load {load:.2f}")
        print(f"{'policy':>22} {'JCT (h)':>9} {'mksp (h)':>9} {'max ρ':>7} {'mean ρ':>7} "
              f"{'ρ>1 %':>6} {'done':>5}  util % by type")
        out = Path(args.out) / name
        runs = [run_one(trace, policy, out) for policy in args.policies.split(",")]
        for summary, _, _ in runs:
            print(row(summary))
        write_report([r for _, r, _ in runs], out / "report.html", f"{name} on {CLUSTER}",
                     [i for _, _, i in runs])


if __name__ == "__main__":
    main()
