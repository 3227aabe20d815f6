"""Issue 16 item 4: reactive autoscaling (HPA rule, cold start) against static provisioning on
the bursty Azure LLM code trace (inter-arrival CV ~ 13): SLO attainment vs GPU-hours.

    python benchmarks/compare_autoscaling.py [--trace PATH] [--cold-start 60]

Llama2-70B, TP-8 on A100-80G; SLO TTFT <= 2.5 s and TPOT <= 150 ms.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

from dlsched.serving.autoscale import AutoscalePolicy
from dlsched.serving.llm_replica import LlmEngineConfig
from dlsched.serving.metrics import Slo
from dlsched.serving.run import serve, service_trace
from dlsched.serving.service import ServiceSpec

CODE = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "traces" / \
    "inference" / "azure-llm-2023" / "AzureLLMInferenceTrace_code.csv"


def row(label: str, m: dict) -> str:
    return (f"| {label} | {m['slo_attainment'] * 100:.2f}% | {m['ttft_p99']:.2f} | "
            f"{m['tpot_p99'] * 1e3:.0f} | {m['gpu_hours']:.1f} | {m['replicas_mean']:.2f} | "
            f"{m['replicas_peak']} | {m['cpu_seconds']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(CODE))
    parser.add_argument("--static", default="1,2,3,4,6,8")
    parser.add_argument("--cold-start", type=float, default=60.0)
    parser.add_argument("--targets", default="4,8,16")
    parser.add_argument("--chunk", type=int, default=None,
                        help="chunked prefill token budget (Sarathi-Serve)")
    args = parser.parse_args()
    spec = ServiceSpec("code", "llama2-70b", "A100-80G", 8, 1, Slo(ttft=2.5, tpot=0.15),
                       args.trace, engine=LlmEngineConfig(chunk_tokens=args.chunk))
    began = time.process_time()
    trace = service_trace(spec)
    print(f"{len(trace)} requests over {trace.duration:.0f} s, read in "
          f"{time.process_time() - began:.2f} s CPU")
    print("| provisioning | SLO attainment | TTFT p99 s | TPOT p99 ms | GPU-h | mean replicas "
          "| peak replicas | CPU s |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.static.split(",")):
        print(row(f"static {n}", serve(spec, trace, [0.0] * n).metrics))
    for target in (float(x) for x in args.targets.split(",")):
        policy = AutoscalePolicy(1, 8, target, 10.0, args.cold_start, 300.0)
        auto = replace(spec, autoscale=policy)
        print(row(f"autoscale 1-8, target {target:g} outstanding, cold start "
                  f"{args.cold_start:g} s", serve(auto, trace, [0.0]).metrics))


if __name__ == "__main__":
    main()
