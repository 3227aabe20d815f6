"""LLM prefill and decode iteration times from Splitwise's measured profile (Patel et al.,
ISCA'24; ``data/profiles/splitwise/perf_model.csv``), as splitwise-sim's database model uses it:

- a prefill iteration's time depends on the batch's prompt tokens (``prompt_size x
  batch_size``: the batch sweep at 512-token prompts and the prompt sweep at batch 1 give one
  curve, repeats averaged), interpolated in log-log space;
- a decode iteration's time depends on the batch size (the batch sweep), interpolated linearly,
  plus ``context_slope`` seconds per token of KV cache beyond the sweep's own context: the
  slope of a least-squares line through the batch-1 rows against their mean context
  (``prompt_size + token_size / 2``), since attention reads every cached token.

Points slower work made faster (a failed run: Llama2-70B TP-2's 64 x 512 prefill takes 0.8 s
against 6.6 s at half the tokens) are dropped and listed in ``dropped``.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.errors import ConfigError, InputError, InputLocation
from dlsched.perf.inference.curve import Curve, monotone_points
from dlsched.perf.inference.fit import StepFit
from dlsched.perf.inference.spread import StepSpread

# Splitwise's hardware names -> dlsched GPU types (cluster/gpu_types.py).
HARDWARE = {"a100-80gb": "A100-80G", "h100-80gb": "H100", "h100-80gb-pcap": "H100-pcap"}
GPU_ALIASES = {"a100": "A100-80G", "a100-80gb": "A100-80G", "a100-80g": "A100-80G",
               "h100": "H100", "h100-80gb": "H100", "h100-pcap": "H100-pcap",
               "h100-80gb-pcap": "H100-pcap"}
BATCH_SWEEP_PROMPT = 512  # the profile's batch sweep runs 512-token prompts


@dataclass(frozen=True)
class StepProfile:
    """Step times of one (model, GPU type, tensor-parallel degree), in seconds."""

    model: str
    gpu: str
    tp: int
    prefill: Curve  # prompt tokens in the iteration -> seconds
    decode: Curve  # requests in the batch -> seconds
    context_slope: float  # seconds per decode iteration per token of KV context
    reference_context: float  # KV tokens per request in the batch sweep
    dropped: tuple[str, ...] = ()
    # a least-squares fit over (prompts, tokens, squared lengths) and (requests, KV tokens)
    # measured on a grid (``fit.py``): when set, it gives the step times instead of the curves
    fit: StepFit | None = None
    # measured / modelled step times of a service that ran (``spread.py``): when set, each
    # simulated step's model time is multiplied by a factor drawn from it
    spread: StepSpread | None = None

    def prefill_seconds(self, tokens: float) -> float:
        """A prefill iteration of ``tokens`` prompt tokens (one prompt, with a fit)."""
        if self.fit is not None:
            return self.fit.prefill(1, tokens, tokens * tokens)
        return self.prefill(tokens)

    def prefill_pack_seconds(self, lengths: list[int], tokens: float) -> float:
        """A prefill iteration of prompts of these ``lengths`` running ``tokens`` tokens (fewer
        than their sum when a prefix cache holds some): the curves see only ``tokens``."""
        if self.fit is None:
            return self.prefill(tokens)
        scale = tokens / max(sum(lengths), 1)
        return self.fit.prefill(len(lengths), tokens,
                                scale * float(sum(n * n for n in lengths)))

    def decode_seconds(self, batch: int, kv_tokens: float) -> float:
        """One decode iteration of ``batch`` requests holding ``kv_tokens`` tokens in all."""
        if self.fit is not None:
            return float(self.fit.decode(batch, kv_tokens))
        base = self.decode(batch)
        extra = self.context_slope * (kv_tokens - batch * self.reference_context)
        return max(0.5 * base, base + extra)


def _rows() -> list[dict[str, str]]:
    path = resources.files("dlsched.data").joinpath("profiles", "splitwise", "perf_model.csv")
    return list(csv.DictReader(StringIO(path.read_text())))


@cache
def step_profiles() -> dict[tuple[str, str, int], StepProfile]:
    """Every (model, GPU type, TP degree) of the bundled profile."""
    groups: dict[tuple[str, str, int], list[dict[str, str]]] = defaultdict(list)
    for row in _rows():
        key = (row["model"], HARDWARE[row["hardware"]], int(row["tensor_parallel"]))
        groups[key].append(row)
    return {key: _profile(key, rows) for key, rows in sorted(groups.items())}


def _means(pairs: list[tuple[float, float]],
           center: Callable[[list[float]], Any] = np.mean) -> list[tuple[float, float]]:
    sums: dict[float, list[float]] = defaultdict(list)
    for x, y in pairs:
        sums[x].append(y)
    return [(x, float(center(ys))) for x, ys in sums.items()]


def _profile(key: tuple[str, str, int], rows: list[dict[str, str]],
             sweep_prompt: int = BATCH_SWEEP_PROMPT, sweep_tokens: int = 128,
             drop_faster: bool = True) -> StepProfile:
    prefill, decode, context = [], [], []
    for r in rows:
        prompt, batch, tokens = int(r["prompt_size"]), int(r["batch_size"]), int(r["token_size"])
        prefill.append((prompt * batch, float(r["prompt_time"]) / 1e3))
        if prompt == sweep_prompt and tokens == sweep_tokens:
            decode.append((batch, float(r["token_time"]) / 1e3))
        if batch == 1:
            context.append((prompt + tokens / 2, float(r["token_time"]) / 1e3))
    if drop_faster:
        kept_p, dropped_p = monotone_points(_means(prefill))
        kept_d, dropped_d = monotone_points(_means(decode))
    else:
        # a CPU run's outliers are other processes taking the core: repeats by their median
        kept_p, kept_d, dropped_p, dropped_d = (running_max(_means(prefill, np.median)),
                                                running_max(_means(decode, np.median)), [], [])
    xs, ys = np.array(context).T
    slope = float(np.polyfit(xs, ys, 1)[0])
    dropped = tuple([f"prefill {x:.0f} tokens: {y:.3f} s" for x, y in dropped_p]
                    + [f"decode batch {x:.0f}: {y:.4f} s" for x, y in dropped_d])
    return StepProfile(key[0], key[1], key[2], _curve(kept_p, log=True), _curve(kept_d),
                       max(0.0, slope), sweep_prompt + sweep_tokens / 2, dropped)


def running_max(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Points sorted by x, each y raised to the highest before it: a step takes no less time
    with more work, so a faster point is noise (a short CPU measurement), not a failed run."""
    out: list[tuple[float, float]] = []
    for x, y in sorted(points):
        out.append((x, max(y, out[-1][1]) if out else y))
    return out


def _curve(points: list[tuple[float, float]], log: bool = False) -> Curve:
    xs, ys = zip(*points, strict=True)
    return Curve(tuple(float(x) for x in xs), tuple(ys), log)


def canonical_gpu(name: str) -> str:
    return GPU_ALIASES.get(name.lower(), name)


def step_profile(model: str, gpu: str, tp: int) -> StepProfile:
    """The measured profile of ``model`` on ``tp`` GPUs of type ``gpu``; a ConfigError names
    what is measured when it is not."""
    profiles = step_profiles()
    found = profiles.get((model.lower(), canonical_gpu(gpu), tp))
    if found is None:
        known = ", ".join(f"{m} on {g} TP-{t}" for m, g, t in profiles)
        raise ConfigError(f"no measured step times for {model} on {gpu} with tensor-parallel "
                          f"degree {tp} (measured: {known})")
    return found


PROFILE_COLUMNS = ("model", "hardware", "prompt_size", "batch_size", "token_size",
                   "prompt_time", "token_time", "tensor_parallel")


def read_step_profiles(path: Path) -> dict[tuple[str, str, int], StepProfile]:
    """Step profiles from a file in the bundled profile's format (Splitwise's columns; times in
    ms), e.g. one ``dlsched inference profile`` measured. Each (model, hardware, TP) group's
    batch sweep is its rows of batch size > 1 at their most common prompt and output size;
    hardware names are the bundled ones' GPU types or kept as written. Repeats are combined
    by their median and a point faster than one with less work is raised to it
    (``running_max``)."""
    rows = _checked_rows(path)
    groups: dict[tuple[str, str, int], list[dict[str, str]]] = defaultdict(list)
    for row in rows:
        hardware = HARDWARE.get(row["hardware"], row["hardware"])
        groups[(row["model"], hardware, int(row["tensor_parallel"]))].append(row)
    out = {}
    for key, group in sorted(groups.items()):
        sweep = [(int(r["prompt_size"]), int(r["token_size"])) for r in group
                 if int(r["batch_size"]) > 1]
        if not sweep:
            raise ConfigError(f"{path}: {key[0]} on {key[1]} TP-{key[2]} has no batch sweep "
                              "(rows of batch_size > 1)")
        prompt, tokens = max(set(sweep), key=sweep.count)
        out[key] = _profile(key, group, prompt, tokens, drop_faster=False)
    return out


def _checked_rows(path: Path) -> list[dict[str, str]]:
    text = path.read_text()
    reader = csv.DictReader(StringIO(text))
    missing = [c for c in PROFILE_COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        raise InputError(InputLocation(str(path), 1, missing[0]), "missing column")
    rows = []
    for line, row in enumerate(reader, start=2):
        for name in PROFILE_COLUMNS[2:]:
            try:
                value = float(row[name])
            except (TypeError, ValueError):
                raise InputError(InputLocation(str(path), line, name),
                                 f"not a number: {row[name]!r}") from None
            if not value > 0:
                raise InputError(InputLocation(str(path), line, name), "must be > 0")
        rows.append(row)
    return rows
