"""Piecewise-linear interpolation of measured step times, with the end segments extended.

Prefill time grows with the batch's prompt tokens roughly as a power law below saturation and
linearly above it, so it is interpolated in log-log space; decode time is close to affine in
the batch size (memory-bound weights plus per-request KV reads), so it is interpolated
linearly. Past the measured range both extend their last segment's slope.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Curve:
    """``y(x)`` through measured points ``xs`` (increasing) and ``ys``; ``log`` interpolates
    log y against log x."""

    xs: tuple[float, ...]
    ys: tuple[float, ...]
    log: bool = False

    def __post_init__(self) -> None:
        if len(self.xs) < 2 or len(self.xs) != len(self.ys):
            raise ValueError("a curve needs two or more (x, y) points")
        if any(b <= a for a, b in zip(self.xs, self.xs[1:], strict=False)):
            raise ValueError(f"x values must increase: {self.xs}")

    def __call__(self, x: float) -> float:
        if self.log:
            lx = [math.log(v) for v in self.xs]
            ly = [math.log(v) for v in self.ys]
            return math.exp(_linear(lx, ly, math.log(max(x, 1e-9))))
        return max(0.0, _linear(self.xs, self.ys, x))

    def without(self, index: int) -> Curve:
        """This curve less one point (held-out evaluation)."""
        keep = [i for i in range(len(self.xs)) if i != index]
        return Curve(tuple(self.xs[i] for i in keep), tuple(self.ys[i] for i in keep),
                     self.log)


def _linear(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    i = min(max(bisect.bisect_left(xs, x) - 1, 0), len(xs) - 2)
    slope = (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i])
    return ys[i] + slope * (x - xs[i])


def monotone_points(points: list[tuple[float, float]], tolerance: float = 0.1
                    ) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Points sorted by x, keeping only those at most ``tolerance`` below the highest earlier
    y (a step cannot get much faster with more work: a far lower time marks a failed
    measurement, small dips are noise), and those dropped."""
    kept: list[tuple[float, float]] = []
    dropped: list[tuple[float, float]] = []
    for x, y in sorted(points):
        if kept and y < (1 - tolerance) * max(k[1] for k in kept):
            dropped.append((x, y))
        else:
            kept.append((x, y))
    return kept, dropped
