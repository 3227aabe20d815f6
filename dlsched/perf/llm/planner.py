"""The parallelism planner: every (DP, TP, PP, micro-batch, ZeRO stage, interleaving,
recomputation) that fits in GPU memory, ranked by predicted iteration time.

Rules: tensor parallelism stays inside a node and divides the attention heads (Megatron's
placement, Narayanan et al. SC'21 §3.3 takeaway #1); ZeRO-2/3 only without pipelining (their
sharded gradients and weights are not kept per micro-batch stage in DeepSpeed's pipeline
engine); interleaving needs the micro-batch count to be a multiple of the pipeline depth and
the stage's layers to split into ``v`` chunks (SC'21 §2.2.2). Recomputation is the least
share of layers (0, 1/4, ... 1) that makes the configuration fit: more only costs time.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from dlsched.errors import ConfigError
from dlsched.perf.llm.hardware import Fabric
from dlsched.perf.llm.iteration import Estimate, estimate
from dlsched.perf.llm.models import LlmModel
from dlsched.perf.llm.parallel import ParallelConfig, Software
from dlsched.wording import count_of

MICRO_BATCHES = (1, 2, 4, 8)
INTERLEAVES = (1, 2, 4, 8)
RECOMPUTE = (0.0, 0.25, 0.5, 0.75, 1.0)


def plan(model: LlmModel, gpus: int, fabric: Fabric, software: Software,
         limit: int | None = None) -> list[Estimate]:
    """Feasible configurations on ``gpus`` GPUs of ``fabric``, fastest first."""
    if gpus < 1:
        raise ConfigError(f"--gpus must be >= 1, got {gpus}")
    if gpus > fabric.num_gpus:
        raise ConfigError(f"--gpus {gpus}: the cluster has "
                          f"{count_of(fabric.num_gpus, fabric.gpu.name + ' GPU')}")
    found = []
    for config in candidates(model, gpus, fabric):
        best = fitting(model, config, fabric, software)
        if best is not None:
            found.append(best)
    found.sort(key=lambda e: (e.iteration_seconds, e.memory_gb_per_gpu, e.config.pp))
    return found[:limit] if limit else found


def fitting(model: LlmModel, config: ParallelConfig, fabric: Fabric,
            software: Software) -> Estimate | None:
    """The estimate with the least recomputation that fits in memory, or None."""
    layers = math.ceil(model.layers / config.pp)
    tried = set()
    for share in RECOMPUTE:
        recomputed = round(layers * share)
        if recomputed in tried:
            continue
        tried.add(recomputed)
        result = estimate(model, _with(config, recompute=recomputed / layers), fabric, software)
        if result.memory_gb_per_gpu <= fabric.gpu.memory_gb:
            return result
    return None


def candidates(model: LlmModel, gpus: int, fabric: Fabric) -> Iterator[ParallelConfig]:
    for tp in _divisors(min(gpus, fabric.gpus_per_node)):
        if model.heads % tp or (model.kv_heads % tp and tp % model.kv_heads):
            continue
        for pp in _divisors(gpus // tp):
            if gpus % (tp * pp) or pp > model.layers:
                continue
            dp = gpus // (tp * pp)
            yield from _per_replica(model, dp, tp, pp)


def _per_replica(model: LlmModel, dp: int, tp: int, pp: int) -> Iterator[ParallelConfig]:
    for mb in MICRO_BATCHES:
        if model.global_batch % (dp * mb):
            continue
        m = model.global_batch // (dp * mb)
        for zero in range(4) if pp == 1 else (0, 1):
            if zero and dp == 1:
                continue
            for v in INTERLEAVES if pp > 1 else (1,):
                if v > 1 and (m % pp or math.ceil(model.layers / pp) % v):
                    continue
                yield ParallelConfig(dp, tp, pp, mb, zero, v, 0.0)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _with(config: ParallelConfig, recompute: float) -> ParallelConfig:
    return ParallelConfig(config.dp, config.tp, config.pp, config.micro_batch,
                          config.zero_stage, config.interleave, recompute)
