"""GPU memory of one rank of the heaviest pipeline stage.

Model states (Rajbhandari et al., "ZeRO", SC'20, §3.1): mixed-precision Adam keeps 2 bytes of
16-bit weights, 2 of gradients and K = 12 of fp32 master weights, momentum and variance per
parameter; ZeRO-1 shards the 12 across the data-parallel group, ZeRO-2 also the gradients,
ZeRO-3 also the weights. Activations (Korthikanti et al., "Reducing Activation Recomputation
in Large Transformer Models", MLSys'23, §4, tensor parallel without sequence parallelism):
``s b h (10 + 24 / t + 5 a s / (h t))`` bytes per layer and micro-batch; with full
recomputation only the layer's input (``2 s b h``) is kept, plus one layer being recomputed.
Under 1F1B the first stage holds ``p`` micro-batches in flight, times ``1 + (p - 1) / (p v)``
with ``v`` interleaved chunks (§4.2.3 of the same paper).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.perf.llm.models import LlmModel
from dlsched.perf.llm.parallel import ParallelConfig, Software

GB = 1e9


@dataclass(frozen=True, slots=True)
class MemoryUse:
    model_states: float  # bytes
    activations: float
    reserved: float

    @property
    def total_gb(self) -> float:
        return (self.model_states + self.activations + self.reserved) / GB


def stage_params(model: LlmModel, config: ParallelConfig) -> float:
    """Parameters one rank of the heaviest stage holds: its layers and an embedding table
    (the first stage's input embedding or the last's output layer), both tables on a single
    stage of a model whose output layer is not tied to its embedding (Llama)."""
    layers = math.ceil(model.layers / config.pp)
    tables = 2 if config.pp == 1 and not model.tied_embeddings else 1
    return (layers * model.layer_params + tables * model.vocab * model.hidden) / config.tp


def model_state_bytes(params: float, zero_stage: int, dp: int) -> float:
    weights, grads, optimizer = 2.0, 2.0, 12.0
    if zero_stage >= 1:
        optimizer /= dp
    if zero_stage >= 2:
        grads /= dp
    if zero_stage >= 3:
        weights /= dp
    return params * (weights + grads + optimizer)


def layer_activation_bytes(model: LlmModel, micro_batch: int, tp: int,
                           software: Software) -> float:
    """Korthikanti et al.'s per-layer activations; the MLP term scales with its width."""
    s, b, h, a = model.seq_len, micro_batch, model.hidden, model.heads
    mlp = 16.0 * model.ffn_hidden / (4 * h) * (1.5 if model.gated_mlp else 1.0)
    replicated = 10.0 / tp if software.sequence_parallel else 10.0
    per_sbh = replicated + (8.0 + mlp) / tp
    scores = 0.0 if software.flash_attention else 5.0 * a * s / (h * tp)
    return s * b * h * (per_sbh + scores)


def activation_bytes(model: LlmModel, config: ParallelConfig, software: Software) -> float:
    layers = math.ceil(model.layers / config.pp)
    full = layer_activation_bytes(model, config.micro_batch, config.tp, software)
    s, b, h = model.seq_len, config.micro_batch, model.hidden
    recomputed = round(layers * config.recompute)
    per_microbatch = recomputed * 2.0 * s * b * h + (layers - recomputed) * full
    p, v = config.pp, config.interleave
    in_flight = min(p * (1 + (p - 1) / (p * v)) if v > 1 else p,
                    max(1, config.microbatches(model.global_batch)))
    logits = 4.0 * s * b * model.vocab / config.tp  # fp32 logits of the last stage
    working = full if recomputed else 0.0
    return per_microbatch * in_flight + working + logits


def memory_use(model: LlmModel, config: ParallelConfig, software: Software) -> MemoryUse:
    states = model_state_bytes(stage_params(model, config), config.zero_stage, config.dp)
    if config.zero_stage >= 2:  # one layer's gathered weights and unreduced gradients
        states += 4.0 * model.layer_params / config.tp
    return MemoryUse(states, activation_bytes(model, config, software),
                     software.reserved_gb * GB)
