"""Issue 16: prefill/decode disaggregation (Splitwise, DistServe) against colocated replicas on
the Azure LLM code and conversation traces, Llama2-70B TP-8, SLO TTFT <= 2.5 s, TPOT <= 150 ms.

    python benchmarks/compare_disaggregation.py [--trace code|conv|PATH] [--machines 8]
        [--rates 1,2] [--prefill-gpu A100-80G] [--decode-gpu A100-80G]

For a fixed number of 8-GPU machines it runs colocated replicas and every prefill/decode split;
goodput (SLO-meeting requests/s) is the throughput figure Splitwise and DistServe compare.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dlsched.serving.disaggregated import Pool, serve_disaggregated
from dlsched.serving.metrics import Slo
from dlsched.serving.run import serve, service_trace
from dlsched.serving.service import ServiceSpec

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "traces" / \
    "inference" / "azure-llm-2023"
TRACES = {"code": DATA / "AzureLLMInferenceTrace_code.csv",
          "conv": DATA / "AzureLLMInferenceTrace_conv.csv"}


def row(label: str, rate: float, m: dict, cpu: float) -> str:
    return (f"| {label} | x{rate:g} | {m['slo_attainment'] * 100:.2f}% | "
            f"{m['goodput_rps']:.2f} | {m['ttft_p50']:.2f} | {m['ttft_p99']:.2f} | "
            f"{m['tpot_p50'] * 1e3:.0f} | {m['tpot_p99'] * 1e3:.0f} | {m['gpu_hours']:.1f} | "
            f"{cpu:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default="code")
    parser.add_argument("--machines", type=int, default=8)
    parser.add_argument("--rates", default="1")
    parser.add_argument("--prefill-gpu", default="A100-80G")
    parser.add_argument("--decode-gpu", default="A100-80G")
    args = parser.parse_args()
    path = str(TRACES.get(args.trace, args.trace))
    slo = Slo(ttft=2.5, tpot=0.15)
    print("| design | rate | SLO attainment | goodput rps | TTFT p50 s | TTFT p99 s | "
          "TPOT p50 ms | TPOT p99 ms | GPU-h | CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for rate in (float(x) for x in args.rates.split(",")):
        spec = ServiceSpec("svc", "llama2-70b", args.decode_gpu, 8, args.machines, slo, path,
                           rate_scale=rate)
        trace = service_trace(spec)
        cpu = time.process_time()
        m = serve(spec, trace, [0.0] * args.machines).metrics
        print(row(f"colocated {args.machines} x {args.decode_gpu}", rate, m,
                  time.process_time() - cpu))
        for p in range(1, args.machines):
            cpu = time.process_time()
            m = serve_disaggregated("llama2-70b", trace, Pool(args.prefill_gpu, 8, p),
                                    Pool(args.decode_gpu, 8, args.machines - p), slo)
            print(row(f"{p} prefill ({args.prefill_gpu}) + {args.machines - p} decode "
                      f"({args.decode_gpu})", rate, m, time.process_time() - cpu))


if __name__ == "__main__":
    main()
