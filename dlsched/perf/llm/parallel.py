"""A parallel training configuration and the software choices the model assumes."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ParallelConfig:
    """``dp * tp * pp`` GPUs; ``micro_batch`` sequences per micro-batch; ``interleave`` model
    chunks per pipeline stage (Narayanan et al. SC'21 §2.2.2; 1 = plain 1F1B); ZeRO stage 0-3
    (Rajbhandari et al., SC'20) shards optimizer states (1), gradients too (2), parameters too
    (3) across the data-parallel group. ``recompute`` is the share of a stage's layers whose
    activations are recomputed in the backward pass instead of kept (Chen et al. 2016;
    Megatron's ``--recompute-num-layers``)."""

    dp: int
    tp: int
    pp: int
    micro_batch: int = 1
    zero_stage: int = 0
    interleave: int = 1
    recompute: float = 1.0  # share of each stage's layers fully recomputed (0: none)

    @property
    def gpus(self) -> int:
        return self.dp * self.tp * self.pp

    def microbatches(self, global_batch: int) -> int:
        """Micro-batches each pipeline runs per iteration (gradient accumulation steps)."""
        return global_batch // (self.dp * self.micro_batch)


@dataclass(frozen=True, slots=True)
class Software:
    """Implementation choices. ``flash_attention`` (Dao et al. 2022) never materializes the
    s x s attention matrix (no ``5 a s^2 b`` activation term, no softmax traffic); Megatron's
    2021 runs predate it, and sequence parallelism (Korthikanti et al. MLSys'23), which also
    splits the norms' and dropouts' activations across the tensor-parallel group.
    ``overlap_dp`` is the share of the gradient all-reduce hidden behind the backward pass
    (0: after the pipeline flush, as Megatron-LM 2021 did). ``reserved_gb``: CUDA context,
    NCCL buffers and allocator fragmentation."""

    flash_attention: bool = True
    sequence_parallel: bool = True
    overlap_dp: float = 0.0
    reserved_gb: float = 3.0
    memory_traffic: float = 0.0  # set by the calibration; see iteration.MEMORY_TRAFFIC


MEGATRON_2021 = Software(flash_attention=False, sequence_parallel=False)
MODERN = Software()
