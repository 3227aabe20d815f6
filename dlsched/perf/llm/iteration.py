"""Time of one training iteration of a (DP, TP, PP, micro-batch, ZeRO) configuration.

One pipeline stage processes a micro-batch in ``t_stage``: its layers' forward, backward (2x)
and, with recomputation, another forward; each layer's GEMMs at the GPU's fitted efficiency
for their size, its memory-bound operations (norms, activations, dropout, softmax) as
``MEMORY_TRAFFIC`` times its activation bytes over HBM bandwidth, and Megatron's tensor-
parallel all-reduces of ``2 s b h`` bytes (2 forward, 2 backward, 2 more when recomputing;
Shoeybi et al. 2019 §3) over NVLink. The last stage also computes the logits; stages exchange
activations point to point (scatter/gather: ``1/t`` per GPU, SC'21 §4.1). 1F1B pipelining
with ``m`` micro-batches takes ``(m + (p - 1) / v) t_stage`` (bubble ``(p - 1) / (v m)``,
SC'21 §2.2). The data-parallel gradient all-reduce (or ZeRO's reduce-scatter/all-gather)
follows the flush, then the optimizer step (memory bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.perf.llm import comm
from dlsched.perf.llm.flops import iteration_flops
from dlsched.perf.llm.hardware import Fabric, GpuSpec
from dlsched.perf.llm.memory import MemoryUse, memory_use, stage_params
from dlsched.perf.llm.models import LlmModel
from dlsched.perf.llm.parallel import ParallelConfig, Software

# Bytes of HBM traffic of a layer's memory-bound operations per byte of its stored
# activations; fitted to one published run (megatron-1.7b on 32 A100, Narayanan et al. SC'21
# Table 1: 137 TFLOP/s per GPU) by ``reference.calibrate_memory_traffic``.
MEMORY_TRAFFIC = 2.58


@dataclass(frozen=True, slots=True)
class Estimate:
    config: ParallelConfig
    iteration_seconds: float
    stage_seconds: float  # one micro-batch, forward and backward, on the slowest stage
    bubble_seconds: float
    tp_seconds: float  # per iteration, on the critical path
    pp_seconds: float
    dp_seconds: float
    optimizer_seconds: float
    memory: MemoryUse
    hardware_flops: float  # per iteration, recomputation counted when on
    model_flops: float  # per iteration, never counting recomputation
    peak_flops: float  # of all GPUs

    @property
    def pflops(self) -> float:
        """Achieved hardware FLOP/s of the whole job, in PFLOP/s (as Megatron reports)."""
        return self.hardware_flops / self.iteration_seconds / 1e15

    @property
    def tflops_per_gpu(self) -> float:
        return self.pflops * 1e3 / self.config.gpus

    @property
    def mfu(self) -> float:
        return self.model_flops / self.iteration_seconds / self.peak_flops

    @property
    def memory_gb_per_gpu(self) -> float:
        return self.memory.total_gb


def gemm_seconds(flops: float, gpu: GpuSpec) -> float:
    efficiency = gpu.gemm_efficiency * flops / (flops + gpu.gemm_half_flops)
    return flops / (gpu.peak_flops * efficiency)


def layer_forward_seconds(model: LlmModel, config: ParallelConfig, fabric: Fabric,
                          software: Software) -> float:
    """Compute and memory-bound time of one layer's forward on one micro-batch, one rank."""
    from dlsched.perf.llm.memory import layer_activation_bytes

    tokens, h, t = config.micro_batch * model.seq_len, model.hidden, config.tp
    up = (2 if model.gated_mlp else 1) * h * model.ffn_hidden
    shapes = (h * (h + 2 * model.kv_hidden), h * h, up, h * model.ffn_hidden)
    gpu = fabric.gpu
    compute = sum(gemm_seconds(2.0 * tokens * w / t, gpu) for w in shapes)
    compute += gemm_seconds(4.0 * tokens * model.seq_len * h / t, gpu)  # scores and values
    traffic = software.memory_traffic or MEMORY_TRAFFIC
    activations = layer_activation_bytes(model, config.micro_batch, t, software)
    return compute + traffic * activations / (gpu.hbm_gbps * 1e9)


def tp_allreduce_seconds(model: LlmModel, config: ParallelConfig, fabric: Fabric) -> float:
    message = 2.0 * config.micro_batch * model.seq_len * model.hidden
    if config.tp <= fabric.gpus_per_node:
        return comm.ring_allreduce(message, config.tp, fabric.nvlink_bus_gbps)
    return comm.hierarchical_allreduce(message, fabric.gpus_per_node,
                                       config.tp // fabric.gpus_per_node,
                                       fabric.nvlink_bus_gbps, fabric.nic_gbps)


def dp_collective_seconds(message_bytes: float, config: ParallelConfig, fabric: Fabric) -> float:
    """An all-reduce over the data-parallel group. Ranks are laid out tensor-parallel first,
    then data-parallel (Megatron's order), so ``gpus_per_node // tp`` DP ranks share a node."""
    per_node = max(1, min(config.dp, fabric.gpus_per_node // config.tp))
    nodes = math.ceil(config.dp / per_node)
    if nodes == 1:
        return comm.ring_allreduce(message_bytes, config.dp, fabric.nvlink_bus_gbps)
    return comm.hierarchical_allreduce(message_bytes, per_node, nodes, fabric.nvlink_bus_gbps,
                                       fabric.nic_gbps)


def estimate(model: LlmModel, config: ParallelConfig, fabric: Fabric,
             software: Software) -> Estimate:
    m = config.microbatches(model.global_batch)
    layers = math.ceil(model.layers / config.pp)
    forward = layer_forward_seconds(model, config, fabric, software)
    recomputed = round(layers * config.recompute) / layers
    passes = 3 + recomputed
    tp_one = tp_allreduce_seconds(model, config, fabric) if config.tp > 1 else 0.0
    tp_layer = (4 + 2 * recomputed) * tp_one
    tokens = config.micro_batch * model.seq_len
    logits = 3 * gemm_seconds(2.0 * tokens * model.hidden * model.vocab / config.tp, fabric.gpu)
    p2p = 0.0
    if config.pp > 1:
        boundary = 2.0 * tokens * model.hidden / config.tp
        p2p = 2 * config.interleave * comm.point_to_point(boundary, fabric.nic_gbps)
    stage = layers * (passes * forward + tp_layer) + logits + p2p
    params = stage_params(model, config)
    zero_per_mb, dp_time = _dp_seconds(params, config, fabric, m)
    stage += zero_per_mb * (1.0 - software.overlap_dp)
    bubble = (config.pp - 1) / config.interleave * stage
    pipeline = m * stage + bubble
    dp_time *= 1.0 - software.overlap_dp
    opt_params = params / config.dp if config.zero_stage >= 1 else params
    optimizer = 2 * 16.0 * opt_params / (fabric.gpu.hbm_gbps * 1e9)
    total = pipeline + dp_time + optimizer
    return Estimate(config, total, stage, bubble, (m + (config.pp - 1)) * layers * tp_layer,
                    (m + config.pp - 1) * p2p, dp_time, optimizer,
                    memory_use(model, config, software),
                    iteration_flops(model, recomputed), iteration_flops(model),
                    config.gpus * fabric.gpu.peak_flops)


def _dp_seconds(params: float, config: ParallelConfig, fabric: Fabric,
                microbatches: int) -> tuple[float, float]:
    """(per-micro-batch ZeRO traffic, per-iteration data-parallel traffic) in seconds.
    ZeRO-0/1: one all-reduce of the 16-bit gradients (ZeRO-1's reduce-scatter + all-gather
    move the same bytes); ZeRO-2: a reduce-scatter per micro-batch, one all-gather; ZeRO-3:
    per micro-batch two all-gathers of the weights and a reduce-scatter (1.5x, ZeRO §7)."""
    if config.dp == 1:
        return 0.0, 0.0
    allreduce = dp_collective_seconds(2.0 * params, config, fabric)
    if config.zero_stage <= 1:
        return 0.0, allreduce
    if config.zero_stage == 2:
        return allreduce / 2, allreduce / 2
    return 1.5 * allreduce, 0.0
