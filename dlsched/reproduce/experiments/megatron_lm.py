"""Megatron-LM's published training throughput (Narayanan et al., SC'21, Table 1) and Llama 3
405B's MFU (Llama Team 2024, Table 4) against the analytic model's prediction for the same
(t, p, d) configurations (``perf/llm/reference.py``; the 1.7B row calibrates the model's one
fitted constant, the others are checks). Metrics: ``pflops`` (aggregate hardware PFLOP/s,
recomputation counted, as the paper counts), ``tflops_per_gpu``, ``mfu``.
"""

from __future__ import annotations

from collections.abc import Iterator

from dlsched.perf.llm.reference import PUBLISHED, predict
from dlsched.reproduce.registry import ExperimentOptions, register_experiment
from dlsched.reproduce.rows import Measured

CASES = tuple(run.name for run in PUBLISHED)


@register_experiment(
    "megatron-lm", "Megatron-LM SC'21 Table 1 (1.7B-1T on A100) and Llama 3 405B (H100): "
    "predicted PFLOP/s and MFU of the published configurations", cases=CASES)
def megatron_lm(options: ExperimentOptions) -> Iterator[Measured]:
    for run in PUBLISHED:
        if run.name not in options.cases:
            continue
        estimate = predict(run).estimate
        policy = "ptd-p" if run.model.startswith("megatron") else "llama3"
        yield Measured(run.name, policy, "pflops", estimate.pflops)
        yield Measured(run.name, policy, "tflops_per_gpu", estimate.tflops_per_gpu)
        yield Measured(run.name, policy, "mfu", estimate.mfu)
