"""Issue 16 item 5: training and inference on one cluster, capacity loaning vs a static split.

64 A100-80G GPUs (8 nodes of 8). A Llama2-70B TP-8 service on the Azure conversation trace
(SLO TTFT <= 2.5 s, TPOT <= 150 ms) and synthetic training jobs resampled from philly-sample
(Poisson arrivals over the hour) share it under tenant quotas (Kueue semantics, docs/tenancy.md):

- static: queue ``serving`` 40 GPUs (5 replicas, always up), ``training`` 24 GPUs, no borrowing;
- loaning: ``training`` may borrow the serving quota the service leaves idle, and ``serving``
  reclaims it by preempting borrowers (``reclaim_within_cohort: any``), as Aryl and Lyra lend
  idle inference GPUs to training; the service keeps 5 replicas, or autoscales 1-5 (HPA rule,
  60 s cold start) with each ``--targets`` value.

    python benchmarks/compare_loaning.py [--jobs 150] [--rate 150]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from dlsched.cluster.cluster import Cluster
from dlsched.cluster.loader import NodeGroup
from dlsched.data_location import find_data
from dlsched.experiment import load_trace
from dlsched.run_config import RunConfig
from dlsched.serving.cluster_run import run_services
from dlsched.serving.services_file import load_services

CONV = "traces/inference/azure-llm-2023/AzureLLMInferenceTrace_conv.csv"
# the whole hour; without the data directory, the checkout's sibling shared/data (this
# workstation's layout), else the five minutes beside the services example
FALLBACKS = (Path(__file__).resolve().parents[2] / "shared" / "data" / CONV,
             Path(__file__).resolve().parents[1] / "examples" / "services" /
             "azure-conv-5min.csv")


def default_trace() -> Path:
    """The Azure conversation trace: from the data directory ($DLSCHED_DATA), else the
    first of ``FALLBACKS`` that exists."""
    found = find_data(CONV)
    if found is not None:
        return found
    return next(path for path in FALLBACKS if path.exists())

SERVICE = """services:
  - name: chat
    model: llama2-70b
    gpu: A100-80G
    tensor_parallel: 8
    queue: serving
    slo: {{ttft_ms: 2500, tpot_ms: 150}}
    trace: {trace}
{scaling}"""

TENANTS = """flavors:
  - {{name: a100, gpu_types: [A100-80G]}}
cohorts:
  - {{name: shared}}
cluster_queues:
  - name: serving
    cohort: shared
    quotas: {{a100: {{gpu: {{nominal: 40, borrowing_limit: 0}}}}}}
    preemption: {{reclaim_within_cohort: any}}
  - name: training
    cohort: shared
    quotas: {{a100: {{gpu: {{nominal: 24, borrowing_limit: {borrow}}}}}}}
local_queues:
  - {{name: default, cluster_queue: training}}
"""


def run(name: str, scaling: str, borrow: int, args: argparse.Namespace, tmp: Path) -> None:
    folder = tmp / name.replace(" ", "-").replace(",", "")
    folder.mkdir(exist_ok=True)
    (folder / "services.yaml").write_text(SERVICE.format(trace=args.trace, scaling=scaling))
    (folder / "tenants.yaml").write_text(TENANTS.format(borrow=borrow))
    cluster = Cluster("a100-64", tuple(NodeGroup(8, "A100-80G", 8, prefix="dgx",
                                                 nvlink_domain=8).expand()))
    config = RunConfig(trace="synthetic", synthetic_jobs=args.jobs, synthetic_rate=args.rate,
                       synthetic_from="philly-sample", single_queue=True, seed=args.seed,
                       tenants=str(folder / "tenants.yaml"), policies=("fifo",),
                       out=str(folder / "out"))
    training = load_trace(config, cluster)
    out = folder / "out"
    out.mkdir(exist_ok=True)
    began = time.process_time()
    report = run_services(load_services(folder / "services.yaml"), cluster, config, "fifo",
                          training, out)
    summary = json.loads((out / "summary.json").read_text())
    jobs = [line.split(",") for line in (out / "jobs.csv").read_text().splitlines()[1:]]
    header = (out / "jobs.csv").read_text().splitlines()[0].split(",")
    jct, gpus = header.index("jct"), header.index("gpu_seconds")
    train = [j for j in jobs if not j[0].startswith("service:")]
    done = [float(j[jct]) for j in train if j[jct]]
    m = report["services"]["chat"]
    print(f"| {name} | {m['slo_attainment'] * 100:.2f}% | {m['ttft_p99']:.2f} | "
          f"{m['tpot_p99'] * 1e3:.0f} | {m['gpu_hours']:.1f} | {len(done)}/{len(train)} | "
          f"{sum(done) / max(len(done), 1) / 3600:.2f} | "
          f"{sum(float(j[gpus]) for j in train) / 3600:.1f} | "
          f"{m.get('replicas_placed_late', 0)} | {summary.get('preemptions')} | "
          f"{time.process_time() - began:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=None, help="the Azure conversation trace "
                        "(default: the data directory's, else a 5-minute sample)")
    parser.add_argument("--jobs", type=int, default=150)
    parser.add_argument("--rate", type=float, default=150.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", default="4,8", help="autoscaler targets to try")
    parser.add_argument("--out", type=Path, default=None,
                        help="keep each design's outputs (report.html: replicas, training "
                        "GPUs and preemptions over time) under this folder")
    args = parser.parse_args()
    args.trace = str(Path(args.trace) if args.trace else default_trace())
    print(f"trace: {args.trace}")
    print("| design | SLO attainment | TTFT p99 s | TPOT p99 ms | service GPU-h | training "
          "jobs finished | training mean JCT h | training GPU-h | replicas placed late | "
          "preemptions | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        where = args.out or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        run("static split", "    replicas: 5\n", 0, args, where)
        run("loaning, 5 replicas", "    replicas: 5\n", 40, args, where)
        for target in args.targets.split(","):
            run(f"loaning, target {target}", "    autoscaling: {min: 1, max: 5, "
                f"target_outstanding: {target}, cold_start_s: 60}}\n", 40, args, where)


if __name__ == "__main__":
    main()
