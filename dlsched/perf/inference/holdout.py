"""Interpolation error of the step-time model on held-out measured points.

Leave-one-out: each interior point of a prefill or decode curve (not its two ends, which would
be extrapolation) is removed, predicted from the rest, and compared with its measurement.
``python -m dlsched.perf.inference.holdout`` prints the table's summary (docs/inference.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlsched.perf.inference.curve import Curve
from dlsched.perf.inference.profile import step_profiles


@dataclass(frozen=True)
class HeldOut:
    profile: str  # model/gpu/tp
    phase: str  # prefill | decode
    x: float
    measured: float
    predicted: float

    @property
    def relative_error(self) -> float:
        return abs(self.predicted - self.measured) / self.measured


def _held_out(curve: Curve) -> list[tuple[float, float, float]]:
    return [(curve.xs[i], curve.ys[i], curve.without(i)(curve.xs[i]))
            for i in range(1, len(curve.xs) - 1)]


def holdout_points() -> list[HeldOut]:
    out = []
    for (model, gpu, tp), p in step_profiles().items():
        name = f"{model}/{gpu}/tp{tp}"
        for phase, curve in (("prefill", p.prefill), ("decode", p.decode)):
            out.extend(HeldOut(name, phase, x, y, f) for x, y, f in _held_out(curve))
    return out


def summary(points: list[HeldOut]) -> dict[str, dict[str, float]]:
    """Median, p90 and max relative error per phase, and the number of points."""
    result = {}
    for phase in ("prefill", "decode"):
        errors = np.array([p.relative_error for p in points if p.phase == phase])
        result[phase] = {"points": float(len(errors)), "median": float(np.median(errors)),
                         "p90": float(np.percentile(errors, 90)), "max": float(errors.max())}
    return result


if __name__ == "__main__":
    for phase, s in summary(holdout_points()).items():
        print(f"{phase}: {s['points']:.0f} held-out points, relative error median "
              f"{s['median']:.1%}, p90 {s['p90']:.1%}, max {s['max']:.1%}")
