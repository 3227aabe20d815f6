"""Step times of a model measured per iteration on a grid, fitted by least squares: an option of
the performance model for a model whose iterations we can time ourselves (the CPU model of
``dlsched inference``), beside the interpolated Splitwise tables (``profile.py``), which stay
as they are for the GPU profiles.

Why a fit over more than one variable: the batch-1 prompt sweep and one batch sweep (the
Splitwise table's shape) leave out what serving mixes. A prefill iteration packs prompts of
different lengths; its time grows with the prompts (a per-prompt attention call), their tokens
(the dense layers) and the sum of their squared lengths (causal attention within each prompt).
A decode iteration's time grows with its requests and their KV tokens (each reads its own
context); the slope per KV token measured at batch 1 is lower than at batch 16-32, whose
caches no longer fit the CPU's.

- prefill: ``t = a + b * prompts + c * tokens + d * sum(length^2)``, least squares;
- decode: per batch size of the grid a line ``t = a_B + c_B * kv_tokens`` (least squares over
  its contexts), and between batch sizes linear interpolation at the same KV tokens per
  request (batch 1 is faster than the batched line through 2-32 would say);
- ``wake``: an idle replica's first iteration is slower than back to back (its weights left
  the caches while it slept): the median extra time of a prefill after a sleep.

Least squares on the relative error (each row divided by its time: a 4 ms step counts as
much as a 300 ms one). ``held_out`` states the error on points left out of the fit.
"""

from __future__ import annotations

import bisect
import csv
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dlsched.errors import InputError, InputLocation

PHASES = ("prefill", "decode", "gap")
STEP_COLUMNS = ("phase", "batch", "tokens", "square_tokens", "seconds", "run", "kind")
FLOOR = 1e-5  # seconds: no step is faster
WAKE_IDLE = 0.1  # seconds a replica sleeps before the profiler's wake-up prefills
WAKE_AFTER = 0.01  # idle seconds after which the simulator adds ``wake`` to a prefill


@dataclass(frozen=True)
class StepPoint:
    """One measured iteration (or the median of a run's equal ones)."""

    phase: str  # "prefill", "decode" or "gap" (the engine's time between iterations)
    batch: int  # prompts (prefill) or requests (decode)
    tokens: float  # prompt tokens (prefill) or KV tokens of the batch (decode)
    square_tokens: float  # sum of squared prompt lengths (prefill); 0 for decode
    seconds: float
    run: int = 0  # points of one run share it
    kind: str = "grid"  # "grid": fitted; "mixed": held out (mixed prompt/context lengths)


@dataclass(frozen=True)
class StepFit:
    """Fitted step times, in seconds: prefill coefficients; per measured batch size of the
    decode grid a line in the batch's KV tokens (between batch sizes, interpolated linearly
    at the same KV tokens per request); ``wake``, the time an idle replica's first iteration
    takes beyond its fitted time (cold caches; measured after ``WAKE_IDLE`` of sleep); ``gap``,
the engine's mean time between iterations, added to each (its scheduling and bookkeeping
outside the model's calls)."""

    prefill_coef: tuple[float, float, float, float]  # 1, prompts, tokens, sum of squares
    decode_batches: tuple[int, ...]  # increasing
    decode_lines: tuple[tuple[float, float], ...]  # (seconds, seconds per KV token) each
    wake: float = 0.0
    gap: float = 0.0  # the engine's own time between two iterations (its bookkeeping)

    def __post_init__(self) -> None:
        if len(self.decode_batches) < 2 or len(self.decode_lines) != len(self.decode_batches):
            raise ValueError("a decode fit needs lines for two or more batch sizes")

    def prefill(self, prompts: int, tokens: float, square_tokens: float) -> float:
        a, b, c, d = self.prefill_coef
        return max(FLOOR, a + b * prompts + c * tokens + d * square_tokens)

    def prefill_lengths(self, lengths: Sequence[int]) -> float:
        return self.prefill(len(lengths), float(sum(lengths)), float(sum(n * n for n in lengths)))

    def decode_affine(self, batch: int) -> tuple[float, float]:
        """(seconds, seconds per KV token) of a decode step of ``batch`` requests."""
        bs = self.decode_batches
        i = min(max(bisect.bisect_left(bs, batch) - 1, 0), len(bs) - 2)
        lo, hi = bs[i], bs[i + 1]
        w = (batch - lo) / (hi - lo)
        (a0, c0), (a1, c1) = self.decode_lines[i], self.decode_lines[i + 1]
        return (1 - w) * a0 + w * a1, ((1 - w) * c0 * lo + w * c1 * hi) / batch

    def decode(self, batch: int, kv_tokens: float | np.ndarray) -> float | np.ndarray:
        a, c = self.decode_affine(batch)
        if isinstance(kv_tokens, np.ndarray):
            return np.maximum(FLOOR, a + c * kv_tokens.astype(float))
        return max(FLOOR, a + c * kv_tokens)

    def scaled(self, factor: float) -> StepFit:
        a, b, c, d = self.prefill_coef
        return StepFit((a * factor, b * factor, c * factor, d * factor), self.decode_batches,
                       tuple((x * factor, y * factor) for x, y in self.decode_lines),
                       self.wake * factor, self.gap * factor)

    def predict(self, p: StepPoint) -> float:
        if p.phase == "prefill":
            return self.prefill(p.batch, p.tokens, p.square_tokens)
        return float(self.decode(p.batch, p.tokens))


def _solve(x: np.ndarray, y: np.ndarray) -> tuple[float, ...]:
    w = 1.0 / y  # relative error
    coef, *_ = np.linalg.lstsq(x * w[:, None], y * w, rcond=None)
    return tuple(float(v) for v in coef)


def _prefill_coef(points: list[StepPoint]) -> tuple[float, float, float, float]:
    x = np.array([[1.0, p.batch, p.tokens, p.square_tokens] for p in points])
    return _solve(x, np.array([p.seconds for p in points]))  # type: ignore[return-value]


def _decode_lines(points: list[StepPoint]
                  ) -> tuple[tuple[int, ...], tuple[tuple[float, float], ...]]:
    by_batch: dict[int, list[StepPoint]] = defaultdict(list)
    for p in points:
        by_batch[p.batch].append(p)
    batches, lines = [], []
    for b, pts in sorted(by_batch.items()):
        if len({p.tokens for p in pts}) < 2:
            continue  # a line needs two contexts
        x = np.array([[1.0, p.tokens] for p in pts])
        lines.append(_solve(x, np.array([p.seconds for p in pts])))
        batches.append(b)
    return tuple(batches), tuple(lines)  # type: ignore[arg-type]


def fit_steps(points: Sequence[StepPoint], wake: float = 0.0, gap: float = 0.0) -> StepFit:
    """The least-squares fit of the ``grid`` points (``mixed`` ones are kept for testing)."""
    grid = [p for p in points if p.kind == "grid"]
    prefill = [p for p in grid if p.phase == "prefill"]
    batches, lines = _decode_lines([p for p in grid if p.phase == "decode"])
    if len(prefill) < 4 or len(batches) < 2:
        raise ValueError(f"a step fit needs >= 4 prefill grid points and decode grid points "
                         f"at two contexts for >= 2 batch sizes (got {len(prefill)} prefill "
                         f"points, {len(batches)} batch sizes)")
    return StepFit(_prefill_coef(prefill), batches, lines, wake, gap)


def gap_seconds(points: Sequence[StepPoint]) -> float:
    """The median of the runs' mean gaps between iterations (``gap`` points); 0 if none."""
    gaps = [p.seconds for p in points if p.phase == "gap"]
    return float(np.median(gaps)) if gaps else 0.0


def fit_points(points: Sequence[StepPoint]) -> StepFit:
    """The fit of a profile's step points: repeats combined, with its wake-up and gap."""
    return fit_steps(combined(points), wake_seconds(points), gap_seconds(points))


def wake_seconds(points: Sequence[StepPoint]) -> float:
    """The median extra time of ``wake`` points (a prefill after ``WAKE_IDLE`` idle) over the
    median of the same prefill run back to back (``warm`` points); 0 when not measured or
    not slower."""
    wake = [p.seconds for p in points if p.kind == "wake"]
    warm = [p.seconds for p in points if p.kind == "warm"]
    if not wake or not warm:
        return 0.0
    return max(0.0, float(np.median(wake) - np.median(warm)))


def combined(points: Sequence[StepPoint]) -> list[StepPoint]:
    """Repeats of the same step (phase, batch, tokens, squares, kind) by their median time (a
    step another process delayed is not the model's time)."""
    groups: dict[tuple[str, int, float, float, str], list[float]] = defaultdict(list)
    for p in points:
        groups[(p.phase, p.batch, p.tokens, p.square_tokens, p.kind)].append(p.seconds)
    return [StepPoint(ph, b, t, s, float(np.median(v)), 0, k)
            for (ph, b, t, s, k), v in sorted(groups.items())]


def held_out(points: Sequence[StepPoint]) -> dict[str, dict[str, float | int]]:
    """Relative errors |predicted / measured - 1| on points the fit did not see: each grid
    point left out in turn (``<phase>_loo``), and the ``mixed`` points under the fit of the
    whole grid (``<phase>_mixed``): median, p90, max and count."""
    pts = [p for p in combined(points) if p.kind in ("grid", "mixed")]
    fit = fit_steps(pts)
    errors: dict[str, list[float]] = defaultdict(list)
    for i, p in enumerate(pts):
        if p.kind == "grid":
            try:
                others = fit_steps(pts[:i] + pts[i + 1:])
            except ValueError:
                continue
            if p.phase == "decode" and p.batch not in others.decode_batches:
                continue  # its batch size's line needs it
            errors[f"{p.phase}_loo"].append(abs(others.predict(p) / p.seconds - 1))
        else:
            errors[f"{p.phase}_mixed"].append(abs(fit.predict(p) / p.seconds - 1))
    return {k: {"median": float(np.median(v)), "p90": float(np.percentile(v, 90)),
                "max": float(max(v)), "points": len(v)} for k, v in sorted(errors.items())}


def write_steps(points: Sequence[StepPoint], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(STEP_COLUMNS)
        for p in points:
            writer.writerow([p.phase, p.batch, p.tokens, p.square_tokens, repr(p.seconds),
                             p.run, p.kind])


def read_steps(path: Path) -> list[StepPoint]:
    """Step points from a ``write_steps`` file; a bad cell is an error naming file, line and
    column."""
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in STEP_COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise InputError(InputLocation(str(path), 1, missing[0]), "missing column")
        out = []
        for line, row in enumerate(reader, start=2):
            if row["phase"] not in PHASES:
                raise InputError(InputLocation(str(path), line, "phase"),
                                 f"expected prefill, decode or gap, got {row['phase']!r}")
            values = {}
            for name in ("batch", "tokens", "square_tokens", "seconds", "run"):
                try:
                    values[name] = float(row[name])
                except (TypeError, ValueError):
                    raise InputError(InputLocation(str(path), line, name),
                                     f"not a number: {row[name]!r}") from None
            if not values["seconds"] > 0 or not values["batch"] >= 1:
                bad = "seconds" if not values["seconds"] > 0 else "batch"
                raise InputError(InputLocation(str(path), line, bad), "must be > 0")
            out.append(StepPoint(row["phase"], int(values["batch"]), values["tokens"],
                                 values["square_tokens"], values["seconds"],
                                 int(values["run"]), row["kind"] or "grid"))
    return out
