"""FLOPs of one training iteration (Narayanan et al., SC'21, §5.1 and Appendix).

Per token and layer the forward pass costs 2 FLOPs per weight of the layer's matrices plus
``4 s h`` for the attention scores and their product with the values; the logit layer costs
``2 h V``. Backward costs twice the forward; activation recomputation adds one more forward of
the layers (not of the logits). For GPT shapes this is the paper's
``96 B s l h^2 (1 + s / 6h + V / 16 l h)`` with recomputation and ``72 B s l h^2 (1 + s / 6h +
V / 12 l h)`` without. *Model* FLOPs (MFU, Chowdhery et al. 2022) never count recomputation;
*hardware* FLOPs (what Megatron's Table 1 reports) do when it is on.
"""

from __future__ import annotations

from dlsched.perf.llm.models import LlmModel


def layer_forward_flops_per_token(model: LlmModel) -> float:
    matrices = model.layer_params - 4 * model.hidden  # the norms' weights are not multiplied
    return 2.0 * matrices + 4.0 * model.seq_len * model.hidden


def logit_forward_flops_per_token(model: LlmModel) -> float:
    return 2.0 * model.hidden * model.vocab


def iteration_flops(model: LlmModel, recompute: float = 0.0) -> float:
    """FLOPs of one iteration (``global_batch`` sequences); ``recompute`` (the share of layers
    recomputed) counts their extra forward pass (hardware FLOPs)."""
    passes = 3.0 + float(recompute)
    per_token = (passes * model.layers * layer_forward_flops_per_token(model)
                 + 3.0 * logit_forward_flops_per_token(model))
    return per_token * model.tokens_per_iteration


def megatron_formula(model: LlmModel, recompute: bool = True) -> float:
    """The paper's closed form for GPT shapes (a cross-check of ``iteration_flops``)."""
    b, s, n, h, v = (model.global_batch, model.seq_len, model.layers, model.hidden,
                     model.vocab)
    if recompute:
        return 96.0 * b * s * n * h * h * (1 + s / (6 * h) + v / (16 * n * h))
    return 72.0 * b * s * n * h * h * (1 + s / (6 * h) + v / (12 * n * h))
