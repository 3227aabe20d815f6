"""Published large-model training runs, and the model's prediction for each.

Megatron-LM (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
Using Megatron-LM", SC'21, Table 1): GPT models on Selene's DGX A100 (80 GB) nodes, full
activation recomputation, FLOPs counted with recomputation; the table gives (t, p, d) and the
batch, not the micro-batch size or interleaving, so the prediction takes the fastest that
fits. Llama 3 (Llama Team, "The Llama 3 Herd of Models", 2024, Table 4): 405B on H100 with
(t, p, d) = (8, 16, 64) and (8, 16, 128), 8,192-token sequences, 16M tokens a batch; BF16
MFU 43% and 41% (400-430 TFLOP/s per GPU); recomputation and interleaving are not published,
so the prediction takes the least recomputation that fits and the fastest interleaving.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from dlsched.perf.llm.hardware import GPU_SPECS, Fabric
from dlsched.perf.llm.iteration import Estimate, estimate
from dlsched.perf.llm.models import BUILTIN_MODELS
from dlsched.perf.llm.parallel import MEGATRON_2021, MODERN, ParallelConfig, Software
from dlsched.perf.llm.planner import INTERLEAVES, MICRO_BATCHES, RECOMPUTE

SELENE = Fabric(GPU_SPECS["A100-80G"], 8, 384, 300.0, 25.0, 16)
LLAMA3_H100 = Fabric(GPU_SPECS["H100"], 8, 2048, 450.0, 50.0, 16)


@dataclass(frozen=True)
class PublishedRun:
    name: str
    model: str
    tp: int
    pp: int
    dp: int
    metric: str  # "tflops_per_gpu" (hardware FLOPs) or "mfu"
    value: float
    source: str
    recompute: bool = True  # as published (Megatron: always); False: least that fits
    calibration: bool = False  # used to fit MEMORY_TRAFFIC, not a check


_SC21 = "Narayanan et al., SC'21, Table 1"
_LLAMA3 = "Llama Team 2024, Table 4"
PUBLISHED: tuple[PublishedRun, ...] = (
    PublishedRun("megatron-1.7b", "megatron-1.7b", 1, 1, 32, "tflops_per_gpu", 137, _SC21,
                 calibration=True),
    PublishedRun("megatron-146b", "megatron-146b", 8, 8, 24, "tflops_per_gpu", 148, _SC21),
    PublishedRun("megatron-530b", "megatron-530b", 8, 35, 9, "tflops_per_gpu", 163, _SC21),
    PublishedRun("megatron-1t", "megatron-1t", 8, 64, 6, "tflops_per_gpu", 163, _SC21),
    PublishedRun("llama3-405b-8k-gpus", "llama3-405b", 8, 16, 64, "mfu", 0.43, _LLAMA3,
                 recompute=False),
    PublishedRun("llama3-405b-16k-gpus", "llama3-405b", 8, 16, 128, "mfu", 0.41, _LLAMA3,
                 recompute=False),
)


@dataclass(frozen=True)
class Check:
    run: PublishedRun
    estimate: Estimate
    predicted: float

    @property
    def rel_diff(self) -> float:
        return (self.predicted - self.run.value) / self.run.value


def predict(run: PublishedRun, software: Software | None = None) -> Check:
    model = BUILTIN_MODELS[run.model]
    fabric = SELENE if run.model.startswith("megatron") else LLAMA3_H100
    if software is None:
        software = MEGATRON_2021 if run.model.startswith("megatron") else MODERN
    best: Estimate | None = None
    for config in _published_configs(run, model.layers, model.global_batch):
        result = estimate(model, config, fabric, software)
        if result.memory_gb_per_gpu > fabric.gpu.memory_gb:
            continue
        if best is None or result.iteration_seconds < best.iteration_seconds:
            best = result
    if best is None:
        raise ValueError(f"{run.name}: no micro-batch size fits in memory")
    value = best.tflops_per_gpu if run.metric == "tflops_per_gpu" else best.mfu
    return Check(run, best, value)


def _published_configs(run: PublishedRun, layers: int, batch: int) -> list[ParallelConfig]:
    shares = (1.0,) if run.recompute else RECOMPUTE
    per_stage = math.ceil(layers / run.pp)
    out = []
    for mb in MICRO_BATCHES:
        if batch % (run.dp * mb):
            continue
        m = batch // (run.dp * mb)
        for v in INTERLEAVES if run.pp > 1 else (1,):
            if v > 1 and (m % run.pp or per_stage % v):
                continue
            out += [ParallelConfig(run.dp, run.tp, run.pp, mb, 1 if run.dp > 1 else 0, v, r)
                    for r in shares]
    return out


def checks(software: Software | None = None) -> list[Check]:
    return [predict(run, software) for run in PUBLISHED]


def calibrate_memory_traffic(low: float = 0.0, high: float = 20.0) -> float:
    """The ``MEMORY_TRAFFIC`` that makes the calibration run's prediction equal its published
    value (bisection: more traffic, slower)."""
    run = next(r for r in PUBLISHED if r.calibration)
    for _ in range(50):
        mid = (low + high) / 2
        predicted = predict(run, replace(MEGATRON_2021, memory_traffic=mid)).predicted
        low, high = (mid, high) if predicted > run.value else (low, mid)
    return (low + high) / 2
