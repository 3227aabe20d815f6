"""Measure the CPU model's prefill and decode iteration times into the bundled profile's format
(Splitwise's ``perf_model.csv`` columns: one row per run of ``batch_size`` prompts of
``prompt_size`` tokens generating ``token_size`` tokens each; ``prompt_time`` is the prefill
iteration and ``token_time`` the median decode iteration, in ms), so the simulator's performance
model (``perf/inference/profile.py``) reads it as it reads the measured A100/H100 table.

Runs go through the serving engine itself (``ContinuousBatcher``), so an iteration's time
includes the engine's own bookkeeping, as it does when serving. Two sweeps, as Splitwise's:
prompt sizes at batch 1 (prefill curve and the decode time's slope in KV context) and batch
sizes at one prompt size (prefill tokens and the decode curve).
"""

from __future__ import annotations

import csv
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from dlsched.serving.real.engine import ContinuousBatcher, LiveRequest
from dlsched.serving.real.replica import ReplicaSettings, build_engine

COLUMNS = ("model", "hardware", "prompt_size", "batch_size", "token_size", "peak_power",
           "average_power", "prompt_time", "token_time", "e2e_time", "tensor_parallel")


@dataclass(frozen=True)
class ProfilePlan:
    prompts: tuple[int, ...] = (8, 16, 32, 64, 128, 256)  # batch-1 sweep
    batches: tuple[int, ...] = (2, 4, 8, 16, 32)  # at sweep_prompt
    sweep_prompt: int = 64
    tokens: int = 16
    repeats: int = 4


def measure(batcher: ContinuousBatcher, prompt: int, batch: int, tokens: int
            ) -> tuple[float, float, float]:
    """(prefill ms, mean decode ms, end-to-end ms) of one run through the engine."""
    batcher.iterations.clear()
    for i in range(batch):
        batcher.add(LiveRequest(i, [(7 * i + j) % 256 for j in range(prompt)], tokens, 0.0))
    began = time.perf_counter()
    while batcher.busy:
        batcher.step()
    e2e = time.perf_counter() - began
    prefill = [it.seconds for it in batcher.iterations if it.phase == "prefill"]
    decode = [it.seconds for it in batcher.iterations if it.phase == "decode"]
    # the median decode step: a step another process delayed is not the model's time
    return 1e3 * sum(prefill), 1e3 * statistics.median(decode or [0.0]), 1e3 * e2e


def profile_rows(settings: ReplicaSettings, plan: ProfilePlan) -> list[dict[str, object]]:
    import torch

    torch.set_num_threads(1)
    engine = replace_batch(settings, max(plan.batches))
    batcher = build_engine(engine)
    measure(batcher, plan.sweep_prompt, 2, 4)  # warm-up
    runs = [(p, 1) for p in plan.prompts] + [(plan.sweep_prompt, b) for b in plan.batches]
    if plan.sweep_prompt not in plan.prompts:
        runs.append((plan.sweep_prompt, 1))
    rows = []
    for _ in range(plan.repeats):
        for prompt, batch in runs:
            prefill, decode, e2e = measure(batcher, prompt, batch, plan.tokens)
            rows.append({"model": settings.model_name, "hardware": "cpu", "prompt_size": prompt,
                         "batch_size": batch, "token_size": plan.tokens, "peak_power": 0,
                         "average_power": 0, "prompt_time": prefill, "token_time": decode,
                         "e2e_time": e2e, "tensor_parallel": 1})
    return rows


def replace_batch(settings: ReplicaSettings, batch: int) -> ReplicaSettings:
    from dataclasses import replace

    return replace(settings, slots=max(settings.slots, batch),
                   engine=replace(settings.engine, max_batch=max(settings.engine.max_batch,
                                                                 batch)))


def write_profile(rows: list[dict[str, object]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
