"""Issue 16 item 4: AlpaServe-style placement (several models on shared GPUs, model-parallel
pipelines to absorb bursts; Li et al., OSDI'23) against dedicated replicas.

    python benchmarks/compare_alpaserve.py [--trace PATH] [--gpus 8] [--slo-scale 5]

Four models of 50-200 ms single-GPU latency, 12 GB of weights each on 16 GB GPUs (one model
per GPU, as AlpaServe's BERT-6.7B on V100s). Arrivals: (a) the Azure LLM code trace (CV ~ 13),
one 15-minute window per model, each shifted to start at 0 (independent bursts, as AlpaServe
maps Azure Functions to models); (b) Gamma processes of CV 1-8. The placement is searched on
one workload (seed 0 / the first windows) and scored on another (seed 1 / the windows shifted
by 7.5 minutes): held out.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from dlsched.data_location import find_data
from dlsched.serving.alpaserve import ServedModel, Workload, alpaserve, attainment, dedicated
from dlsched.serving.requests import read_requests

MODELS = [ServedModel(f"m{i}", lat, 12.0) for i, lat in enumerate((0.05, 0.1, 0.15, 0.2))]
CODE = "traces/inference/azure-llm-2023/AzureLLMInferenceTrace_code.csv"


def trace_workload(path: Path, offset: float, window: float, rate: float) -> Workload:
    arrival = read_requests(path).arrival
    times, models = [], []
    for m in range(len(MODELS)):
        start = offset + m * window
        t = arrival[(arrival >= start) & (arrival < start + window)] - start
        times.append(t / rate)
        models.append(np.full(len(t), m))
    a, m = np.concatenate(times), np.concatenate(models)
    order = np.argsort(a, kind="stable")
    return Workload(a[order], m[order])


def compare(label: str, search: Workload, score: Workload, gpus: int, slo: float,
            overhead: float) -> str:
    began = time.process_time()
    placement, stages, _ = alpaserve(MODELS, search, gpus, 16.0, slo, overhead)
    cpu = time.process_time() - began
    shared = attainment(placement, MODELS, score, slo, overhead)
    alone = attainment(dedicated(MODELS, gpus), MODELS, score, slo, overhead)
    return (f"| {label} | {len(score.arrival)} | {alone * 100:.1f}% | {shared * 100:.1f}% | "
            f"{stages} | {placement.describe(MODELS)} | {cpu:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", type=Path, default=None)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--slo-scale", type=float, default=5.0)
    parser.add_argument("--overhead", type=float, default=0.05)
    parser.add_argument("--rate", type=float, default=1.0, help="trace rate multiplier")
    args = parser.parse_args()
    print("| workload | requests | dedicated | AlpaServe | group size | placement | search CPU s |")
    print("|---|---|---|---|---|---|---|")
    path = args.trace or find_data(CODE)
    if path is not None:
        search = trace_workload(path, 0.0, 900.0, args.rate)
        score = trace_workload(path, 450.0, (3600.0 - 450.0) / 4, args.rate)
        print(compare(f"Azure code x{args.rate:g}", search, score, args.gpus, args.slo_scale,
                      args.overhead))
    for cv in (1.0, 2.0, 4.0, 8.0):
        rates = [1.2 * args.gpus / len(MODELS) / (4 * m.latency) for m in MODELS]
        search = Workload.gamma(rates, cv, 600.0, seed=0)
        score = Workload.gamma(rates, cv, 600.0, seed=1)
        print(compare(f"Gamma CV {cv:g}", search, score, args.gpus, args.slo_scale,
                      args.overhead))


if __name__ == "__main__":
    main()
