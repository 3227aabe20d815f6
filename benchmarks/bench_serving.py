"""Issue 16: one hour of the Azure LLM conversation trace (19,366 requests) on Llama2-70B TP-8
A100-80G replicas with continuous batching: SLO attainment, p99 TTFT/TPOT, wall and CPU seconds
of the request-level simulation, for 2, 4 and 8 replicas; and the fewest replicas for 99%.

    python benchmarks/bench_serving.py [--trace PATH] [--replicas 2,4,8] [--chunk N]

SLO: TTFT <= 2.5 s and TPOT <= 150 ms (DistServe's chatbot setting for a 66B model).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dlsched.serving.llm_replica import LlmEngineConfig
from dlsched.serving.metrics import Slo
from dlsched.serving.run import replicas_for_slo, serve, service_trace
from dlsched.serving.service import ServiceSpec

CONV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "traces" / \
    "inference" / "azure-llm-2023" / "AzureLLMInferenceTrace_conv.csv"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default=str(CONV))
    parser.add_argument("--replicas", default="2,4,8")
    parser.add_argument("--model", default="llama2-70b")
    parser.add_argument("--gpu", default="A100-80G")
    parser.add_argument("--tp", type=int, default=8)
    parser.add_argument("--rate", type=float, default=1.0)
    parser.add_argument("--chunk", type=int, default=None,
                        help="chunked prefill: tokens per iteration (Sarathi-Serve)")
    parser.add_argument("--find", action="store_true", help="also find replicas for 99%%")
    args = parser.parse_args(argv)
    if args.chunk is not None and args.chunk < 1:
        parser.error(f"--chunk must be >= 1, got {args.chunk}")
    spec = ServiceSpec("chat", args.model, args.gpu, args.tp, 1, Slo(ttft=2.5, tpot=0.15),
                       args.trace, rate_scale=args.rate,
                       engine=LlmEngineConfig(chunk_tokens=args.chunk))
    began = time.process_time()
    trace = service_trace(spec)
    engine = f"chunked prefill, {args.chunk} tokens" if args.chunk else "prefill first"
    print(f"read {len(trace)} requests over {trace.duration:.0f} s in "
          f"{time.process_time() - began:.2f} s CPU; {engine}")
    print("| replicas | SLO attainment | TTFT p50 s | TTFT p99 s | TPOT p50 ms | TPOT p99 ms "
          "| latency p99 s | goodput rps | GPU-h | peak batch | wall s | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (int(x) for x in args.replicas.split(",")):
        wall, cpu = time.perf_counter(), time.process_time()
        m = serve(spec, trace, [0.0] * n).metrics
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"| {n} | {m['slo_attainment'] * 100:.2f}% | {m['ttft_p50']:.3f} | "
              f"{m['ttft_p99']:.3f} | {m['tpot_p50'] * 1e3:.1f} | {m['tpot_p99'] * 1e3:.1f} | "
              f"{m['latency_p99']:.1f} | {m['goodput_rps']:.2f} | {m['gpu_hours']:.1f} | "
              f"{m['peak_batch']} | {wall:.2f} | {cpu:.2f} |")
    if args.find:
        cpu = time.process_time()
        needed, tried = replicas_for_slo(spec, trace, 0.99)
        print(f"fewest replicas for 99%: {needed} (tried "
              + ", ".join(f"{k}: {a * 100:.2f}%" for k, a in tried)
              + f"; {time.process_time() - cpu:.1f} s CPU)")


if __name__ == "__main__":
    main()
