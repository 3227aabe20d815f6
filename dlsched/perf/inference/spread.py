"""Step times as a measured distribution, not one number: an option of the performance model.

A served step does not always take the time its profile says. On a CPU replica it shares the
core's caches, memory bandwidth and the scheduler with the front end and the rest of the
machine; a GPU replica has its own sources of variance (clocks, collectives). The profile gives
the model's time for a step of a given batch and context; ``StepSpread`` keeps, per phase, the
empirical distribution of *measured / modelled* over the steps of a service that ran (in
``dlsched inference validate``: a calibration replay of other requests, at the load level to
be predicted, before the replay that is compared). The simulator then draws each step's
factor from that distribution (seeded: a run is deterministic): the empirical-distribution
(bootstrap) model of service times, as trace-driven queueing simulations use when a
parametric fit does not hold (Law, *Simulation Modeling and Analysis*, 5th ed., §6.2.4
"empirical distributions").

Why a distribution and not its median: a latency is a sum of step times, and its percentiles
are set by queueing, which grows with the steps' variance (Pollaczek-Khinchine), so a model with
the right median step and no spread under-predicts p99 latency.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

SPREAD_PHASES = ("prefill", "decode")


@dataclass(frozen=True)
class StepSpread:
    """Per phase, the sorted ratios measured / modelled of the steps of a measured run."""

    prefill: tuple[float, ...]
    decode: tuple[float, ...]
    seed: int = 0

    def __post_init__(self) -> None:
        for phase in SPREAD_PHASES:
            ratios = getattr(self, phase)
            if not ratios:
                raise ValueError(f"a step spread needs {phase} ratios")
            if min(ratios) <= 0:
                raise ValueError(f"{phase} step ratios must be positive")

    @classmethod
    def of(cls, ratios: dict[str, Sequence[float]], seed: int = 0) -> StepSpread:
        return cls(*(tuple(sorted(float(r) for r in ratios[p])) for p in SPREAD_PHASES),
                   seed=seed)

    def quantiles(self, qs: Sequence[float] = (0.1, 0.5, 0.9, 0.99)) -> dict[str, list[float]]:
        return {p: [float(np.quantile(getattr(self, p), q)) for q in qs]
                for p in SPREAD_PHASES}

    def summary(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {}
        for phase in SPREAD_PHASES:
            r = np.asarray(getattr(self, phase))
            out[f"{phase}_steps"] = len(r)
            out[f"{phase}_mean"] = float(r.mean())
            for q in (50, 90, 99):
                out[f"{phase}_p{q}"] = float(np.percentile(r, q))
        return out

    def sampler(self, salt: int) -> SpreadSampler:
        return SpreadSampler(self, salt)


class SpreadSampler:
    """One replica's draws (its own stream: ``salt`` tells replicas apart)."""

    def __init__(self, spread: StepSpread, salt: int) -> None:
        self._rng = np.random.default_rng([spread.seed, salt])
        self._prefill = np.asarray(spread.prefill)
        self._decode = np.asarray(spread.decode)

    def prefill(self) -> float:
        return float(self._prefill[self._rng.integers(len(self._prefill))])

    def decode(self, steps: int) -> np.ndarray:
        return self._decode[self._rng.integers(len(self._decode), size=steps)]


def step_ratios(iterations: Sequence[dict], predict: Callable[[dict], float],
                idle_after: float) -> dict[str, list[float]]:
    """Measured / modelled per phase for a service's iteration records (``start``,
    ``seconds``, ``phase``, ...). ``predict`` gives the model's time of one record. A prefill
    that follows ``idle_after`` seconds or more of idleness is left out: the model adds its
    fitted wake-up there, which the ratio would count a second time."""
    out: dict[str, list[float]] = {p: [] for p in SPREAD_PHASES}
    previous_end: dict[object, float] = {}  # per replica
    for it in sorted(iterations, key=lambda i: i["start"]):
        replica = it.get("replica", 0)
        end = previous_end.get(replica)
        woke = end is None or it["start"] - end >= idle_after
        previous_end[replica] = it["start"] + it["seconds"]
        if it["phase"] not in out or (it["phase"] == "prefill" and woke):
            continue
        modelled = predict(it)
        if modelled > 0:
            out[it["phase"]].append(it["seconds"] / modelled)
    return out
