"""Measure the CPU model's prefill and decode iteration times into the bundled profile's format
(Splitwise's ``perf_model.csv`` columns: one row per run of ``batch_size`` prompts of
``prompt_size`` tokens generating ``token_size`` tokens each; ``prompt_time`` is the prefill
iteration and ``token_time`` the median decode iteration, in ms), so the simulator's performance
model (``perf/inference/profile.py``) reads it as it reads the measured A100/H100 table.

``profile_steps`` measures more for the fitted option of the performance model
(``perf/inference/fit.py``): decode on a grid of batch sizes x contexts, the prefill packs
those runs make (up to ``max_prefill_tokens`` of equal prompts each), and, held out of the
fit to test it, runs of mixed prompt lengths (mixed packs, decode over mixed contexts).

Runs go through the serving engine itself (``ContinuousBatcher``), so an iteration's time
includes the engine's own bookkeeping, as it does when serving. Two sweeps, as Splitwise's:
prompt sizes at batch 1 (prefill curve and the decode time's slope in KV context) and batch
sizes at one prompt size (prefill tokens and the decode curve).
"""

from __future__ import annotations

import csv
import random
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

from dlsched.perf.inference.fit import WAKE_IDLE, StepPoint
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
    grid_batches: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    grid_contexts: tuple[int, ...] = (16, 64, 128, 256, 448)  # prompt tokens
    grid_tokens: int = 12  # output tokens of a grid run: 11 decode steps
    grid_repeats: int = 3
    mixed_runs: tuple[int, ...] = (3, 6, 12, 20, 28)  # batch sizes of the held-out runs
    mixed_longest: int = 400
    wake_runs: int = 8  # prefills after WAKE_IDLE asleep, and as many back to back
    seed: int = 0


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


def run_points(batcher: ContinuousBatcher, prompts: list[int], tokens: int, run: int,
               kind: str) -> list[StepPoint]:
    """One run of these prompts through the engine: each prefill iteration a point, the mean
    gap between its iterations (the engine's own time) a ``gap`` point, and the
    decode iterations (all of the same batch) as one point, their mean time (a latency adds
    step times up, so their mean, occasional slow steps included, is what it sees) at their
    median KV tokens (those attended: the engine records them after the step's token)."""
    batcher.iterations.clear()
    for i, n in enumerate(prompts):
        batcher.add(LiveRequest(i, [(7 * i + j) % 256 for j in range(n)], tokens, 0.0))
    while batcher.busy:
        batcher.step()
    its = batcher.iterations
    out = [StepPoint("prefill", it.batch, float(it.tokens), float(it.square_tokens),
                     it.seconds, run, kind) for it in its if it.phase == "prefill"]
    gaps = [b.start - (a.start + a.seconds) for a, b in zip(its, its[1:], strict=False)]
    if gaps and kind != "warm-up":
        out.append(StepPoint("gap", 1, 0.0, 0.0, max(float(statistics.fmean(gaps)), 1e-9),
                             run, "gap"))
    decode = [it for it in its if it.phase == "decode"]
    if decode:
        out.append(StepPoint("decode", decode[0].batch,
                             float(statistics.median(it.tokens - it.batch for it in decode)),
                             0.0, float(statistics.fmean(it.seconds for it in decode)),
                             run, kind))
    return out


def step_runs(settings: ReplicaSettings, plan: ProfilePlan) -> list[tuple[list[int], str]]:
    """The grid's runs (equal prompts) and the held-out runs (seeded mixed lengths)."""
    longest = settings.max_context - plan.grid_tokens
    runs = [([c] * b, "grid") for c in plan.grid_contexts if c <= longest
            for b in plan.grid_batches]
    rng = random.Random(plan.seed)
    top = min(plan.mixed_longest, longest)
    runs += [([rng.randint(4, top) for _ in range(b)], "mixed") for b in plan.mixed_runs]
    return runs


def profile_steps(settings: ReplicaSettings, plan: ProfilePlan) -> list[StepPoint]:
    """Step points of every run of ``step_runs``, ``grid_repeats`` times (repeats
    interleaved, so a disturbance of the machine spreads over the grid)."""
    import torch

    torch.set_num_threads(1)
    runs = step_runs(settings, plan)
    batcher = build_engine(replace_batch(settings, max(len(p) for p, _ in runs)))
    run_points(batcher, [plan.sweep_prompt] * 2, 4, -1, "warm-up")
    out = []
    for _ in range(plan.grid_repeats):
        for i, (prompts, kind) in enumerate(runs):
            out += run_points(batcher, prompts, plan.grid_tokens, i, kind)
    return out + wake_points(batcher, plan, len(runs))


def wake_points(batcher: ContinuousBatcher, plan: ProfilePlan, run: int) -> list[StepPoint]:
    """A one-prompt prefill after ``WAKE_IDLE`` seconds asleep (as a replica waits for its
    next request), ``wake_runs`` times, and the same prefill back to back as often."""
    out = []
    for i in range(plan.wake_runs):
        time.sleep(WAKE_IDLE)
        for kind in ("wake", "warm"):
            out += [replace(p, kind=kind) for p in run_points(
                batcher, [plan.sweep_prompt], 2, run + i, kind) if p.phase == "prefill"]
    return out


def replace_batch(settings: ReplicaSettings, batch: int) -> ReplicaSettings:
    return replace(settings, slots=max(settings.slots, batch),
                   engine=replace(settings.engine, max_batch=max(settings.engine.max_batch,
                                                                 batch)))


def write_profile(rows: list[dict[str, object]], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
