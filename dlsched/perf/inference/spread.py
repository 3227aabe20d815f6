"""Step times as a measured distribution, not one number: an option of the performance model.

A served step does not always take the time its profile says. On a CPU replica it shares the
core's caches, memory bandwidth and the scheduler with the front end and the rest of the
machine; a GPU replica has its own sources of variance (clocks, collectives). The profile gives
the model's time for a step of a given batch and context; ``StepSpread`` keeps, per phase, the
empirical distribution of *measured / modelled* over the steps of a service that ran (in
``dlsched inference validate``: calibration replays of other requests, at the load level to
be predicted, just before and just after the replay that is compared). The simulator then
draws each step's factor from that distribution (seeded: a run is deterministic): the
empirical-distribution (bootstrap) model of service times, as trace-driven queueing
simulations use when a parametric fit does not hold (Law, *Simulation Modeling and
Analysis*, 5th ed., §6.2.4 "empirical distributions").

Why a distribution and not its median: a latency is a sum of step times, and its percentiles
are set by queueing, which grows with the steps' variance (Pollaczek-Khinchine), so a model with
the right median step and no spread under-predicts p99 latency.

Why blocks and not independent draws: slow steps come in runs (a replica whose core is slowed
stays slow for tens of steps: measured on a CPU replica, the autocorrelation of the ratios is
about 0.6 at a lag of 20 steps), so a request's steps are slow together and its time per
output token spreads far more than an average of independent draws. The sampler is the
stationary bootstrap (Politis & Romano, "The Stationary Bootstrap", JASA 89, 1994): it replays
the measured sequence in blocks of geometric length, mean ``block`` steps, each from a random
place, which keeps the runs and the marginal distribution. ``block`` defaults to the
sequence's correlation length: the first lag at which the autocorrelation of the log ratios
falls below 1/e (the e-folding lag of an AR(1) process); ``block=1`` draws steps independently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

SPREAD_PHASES = ("prefill", "decode")


@dataclass(frozen=True)
class StepSpread:
    """Per phase, the ratios measured / modelled of a measured run's steps, in the order they
    ran (replica by replica), and the mean block length of the draws."""

    prefill: tuple[float, ...]
    decode: tuple[float, ...]
    seed: int = 0
    block: float = 1.0  # mean steps per replayed run; 1: independent draws

    def __post_init__(self) -> None:
        for phase in SPREAD_PHASES:
            ratios = getattr(self, phase)
            if not ratios:
                raise ValueError(f"a step spread needs {phase} ratios")
            if min(ratios) <= 0:
                raise ValueError(f"{phase} step ratios must be positive")
        if not self.block >= 1:
            raise ValueError(f"a step spread's mean block must be at least 1 step: {self.block}")

    @classmethod
    def of(cls, ratios: dict[str, Sequence[float]], seed: int = 0,
           block: float | None = None) -> StepSpread:
        """``ratios`` per phase in the order the steps ran; ``block`` None: the decode
        sequence's correlation length (``correlation_steps``)."""
        prefill, decode = (tuple(float(r) for r in ratios[p]) for p in SPREAD_PHASES)
        if block is None:
            block = correlation_steps(decode)
        return cls(prefill, decode, seed=seed, block=float(block))

    def summary(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {"block_steps": self.block}
        for phase in SPREAD_PHASES:
            r = np.asarray(getattr(self, phase))
            out[f"{phase}_steps"] = len(r)
            out[f"{phase}_mean"] = float(r.mean())
            for q in (50, 90, 99):
                out[f"{phase}_p{q}"] = float(np.percentile(r, q))
        return out

    def sampler(self, salt: int) -> SpreadSampler:
        return SpreadSampler(self, salt)


def correlation_steps(ratios: Sequence[float], most: int = 1000) -> int:
    """The first lag at which the autocorrelation of ``log(ratios)`` falls below 1/e (1 for a
    sequence without correlation or too short to tell), at most ``most`` and a tenth of the
    sequence."""
    x = np.log(np.asarray(ratios, dtype=float))
    x = x - x.mean()
    var = float(np.dot(x, x))
    limit = min(most, len(x) // 10)
    if var <= 0 or limit < 2:
        return 1
    for lag in range(1, limit + 1):
        if float(np.dot(x[:-lag], x[lag:])) / var < 1 / np.e:
            return lag
    return limit


class _Blocks:
    """Stationary-bootstrap indices into a sequence of ``n``: runs of geometric length (mean
    ``block``), each starting at a uniformly drawn place, wrapping at the end."""

    def __init__(self, rng: np.random.Generator, n: int, block: float) -> None:
        self._rng, self._n, self._p = rng, n, 1.0 / block
        self._next = int(rng.integers(n))

    def take(self, k: int) -> np.ndarray:
        rng, n = self._rng, self._n
        jump = rng.random(k) < self._p
        where = np.flatnonzero(jump)
        starts = np.concatenate(([self._next], rng.integers(n, size=len(where))))
        first = np.concatenate(([0], where))  # draw index at which each run begins
        run = np.cumsum(jump)
        idx = (starts[run] + np.arange(k) - first[run]) % n
        self._next = int(idx[-1] + 1) % n if k else self._next
        return idx


class SpreadSampler:
    """One replica's draws (its own stream: ``salt`` tells replicas apart)."""

    def __init__(self, spread: StepSpread, salt: int) -> None:
        rng = np.random.default_rng([spread.seed, salt])
        self._prefill = np.asarray(spread.prefill)
        self._decode = np.asarray(spread.decode)
        self._prefill_at = _Blocks(rng, len(self._prefill), spread.block)
        self._decode_at = _Blocks(rng, len(self._decode), spread.block)

    def prefill(self) -> float:
        return float(self._prefill[self._prefill_at.take(1)[0]])

    def decode(self, steps: int) -> np.ndarray:
        return self._decode[self._decode_at.take(steps)]


def step_ratios(iterations: Sequence[dict], predict: Callable[[dict], float],
                idle_after: float) -> dict[str, list[float]]:
    """Measured / modelled per phase for a service's iteration records (``start``,
    ``seconds``, ``phase``, ...), replica by replica in the order they ran. ``predict`` gives
    the model's time of one record. A prefill that follows ``idle_after`` seconds or more of
    idleness is left out: the model adds its fitted wake-up there, which the ratio would count
    a second time."""
    out: dict[str, list[float]] = {p: [] for p in SPREAD_PHASES}
    previous_end: dict[object, float] = {}  # per replica
    for it in sorted(iterations, key=lambda i: (i.get("replica", 0), i["start"])):
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
