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

Why per batch size: the ratio of a decode step can depend on its batch, because the profile
fits a step's batch dependence on steps measured alone, which a served step does not run as.
On the CPU replica of 2026-12-05 the calibration replays' median ratio was 0.86-0.89 for batch
1 against 0.96-1.02 for 3-8 in one run, and flat within 5% in the next. A decode step's
factor is then the median ratio of its batch class (1, 2, 3-4, 5-8, ...: ``batch_class``)
over the median of all, times a draw of the residual (ratio / its class's factor), so slow
large batches, which make the tail at high load, are not drawn at the small batches' speed.
A class with fewer than ``MIN_CLASS_STEPS`` steps takes the factor of the nearest class that
has them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

SPREAD_PHASES = ("prefill", "decode")
MIN_CLASS_STEPS = 30  # decode steps of a batch class before it has a factor of its own


def batch_class(batch: int) -> int:
    """0 for batch 1, 1 for 2, 2 for 3-4, 3 for 5-8, ...: ceil(log2(batch))."""
    return max(int(batch) - 1, 0).bit_length()


@dataclass(frozen=True)
class StepSpread:
    """Per phase, the ratios measured / modelled of a measured run's steps, in the order they
    ran (replica by replica), and the mean block length of the draws. With ``batch_factors``
    the decode ratios are residuals: each ratio over its batch class's factor (``of``)."""

    prefill: tuple[float, ...]
    decode: tuple[float, ...]
    seed: int = 0
    block: float = 1.0  # mean steps per replayed run; 1: independent draws
    batch_factors: tuple[float, ...] = ()  # per ``batch_class``; () for none (all 1)
    # prefills after idling: measured / (modelled + the fitted wake-up); () for none (such a
    # prefill then takes the wake-up whole and a ``prefill`` draw)
    woke: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        for phase in SPREAD_PHASES:
            ratios = getattr(self, phase)
            if not ratios:
                raise ValueError(f"a step spread needs {phase} ratios")
            if min(ratios) <= 0:
                raise ValueError(f"{phase} step ratios must be positive")
        if not self.block >= 1:
            raise ValueError(f"a step spread's mean block must be at least 1 step: {self.block}")
        if any(not f > 0 for f in self.batch_factors):
            raise ValueError("batch factors must be positive")
        if any(not r > 0 for r in self.woke):
            raise ValueError("woke prefill ratios must be positive")

    def batch_factor(self, batch: int) -> float:
        """The decode factor of a step of ``batch`` requests (1 without batch factors; a
        batch larger than any measured takes the largest class's)."""
        return _factor_of(self.batch_factors, batch)

    @classmethod
    def of(cls, ratios: dict[str, Sequence[float]], seed: int = 0,
           block: float | None = None) -> StepSpread:
        """``ratios`` per phase in the order the steps ran, and optionally ``decode_batch``,
        each decode ratio's batch (then the decode ratios are corrected per batch class:
        ``class_factors``) and ``woke``, the ratios of prefills after idling; ``block`` None:
        the decode residuals' correlation length (``correlation_steps``)."""
        prefill, decode = (tuple(float(r) for r in ratios[p]) for p in SPREAD_PHASES)
        factors: tuple[float, ...] = ()
        batches = ratios.get("decode_batch")
        if batches is not None:
            factors = class_factors(decode, batches)
            decode = tuple(r / _factor_of(factors, b)
                           for r, b in zip(decode, batches, strict=True))
        if block is None:
            block = correlation_steps(decode)
        return cls(prefill, decode, seed=seed, block=float(block), batch_factors=factors,
                   woke=tuple(float(r) for r in ratios.get("woke", ())))

    def summary(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {"block_steps": self.block}
        for c, factor in enumerate(self.batch_factors):
            out[f"decode_batch_class_{c}_factor"] = factor
        if self.woke:
            out["woke_steps"] = len(self.woke)
            out["woke_p50"] = float(np.median(self.woke))
        for phase in SPREAD_PHASES:
            r = np.asarray(getattr(self, phase))
            out[f"{phase}_steps"] = len(r)
            out[f"{phase}_mean"] = float(r.mean())
            for q in (50, 90, 99):
                out[f"{phase}_p{q}"] = float(np.percentile(r, q))
        return out

    def sampler(self, salt: int) -> SpreadSampler:
        return SpreadSampler(self, salt)


def _factor_of(factors: Sequence[float], batch: int) -> float:
    """``batch``'s class's factor in ``factors`` (the last class's beyond them; 1 for none)."""
    return factors[min(batch_class(batch), len(factors) - 1)] if factors else 1.0


def class_factors(ratios: Sequence[float], batches: Sequence[float]) -> tuple[float, ...]:
    """Per batch class, from 0 to the largest seen, the median ratio of its steps over the
    median of all; a class with fewer than ``MIN_CLASS_STEPS`` steps takes the nearest
    class's that has them (the smaller on a tie); all 1 when none has them."""
    r = np.asarray(ratios, dtype=float)
    k = np.array([batch_class(int(b)) for b in batches], dtype=np.int64)
    if len(r) == 0:
        return ()
    overall = float(np.median(r))
    own = {c: float(np.median(r[k == c])) / overall for c in np.unique(k).tolist()
           if int((k == c).sum()) >= MIN_CLASS_STEPS}
    if not own:
        return (1.0,) * (int(k.max()) + 1)
    return tuple(own[min(own, key=lambda c: (abs(c - want), c))]
                 for want in range(int(k.max()) + 1))


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
        self._spread = spread
        self._prefill = np.asarray(spread.prefill)
        self._decode = np.asarray(spread.decode)
        self._prefill_at = _Blocks(rng, len(self._prefill), spread.block)
        self._decode_at = _Blocks(rng, len(self._decode), spread.block)
        # prefills after idling are rare and apart: drawn independently
        self._woke = np.asarray(spread.woke)
        self._woke_at = _Blocks(rng, len(self._woke), 1.0) if spread.woke else None

    def prefill(self) -> float:
        return float(self._prefill[self._prefill_at.take(1)[0]])

    def woke(self) -> float | None:
        """A prefill after idling: its factor on (modelled + wake-up), None without such
        ratios."""
        if self._woke_at is None:
            return None
        return float(self._woke[self._woke_at.take(1)[0]])

    def decode(self, steps: int, batch: int = 1) -> np.ndarray:
        """``steps`` decode factors for a run of steps of ``batch`` requests."""
        return self._decode[self._decode_at.take(steps)] * self._spread.batch_factor(batch)


def step_ratios(iterations: Sequence[dict], predict: Callable[[dict], float],
                idle_after: float, wake: float = 0.0) -> dict[str, list[float]]:
    """Measured / modelled per phase for a service's iteration records (``start``,
    ``seconds``, ``phase``, ...), replica by replica in the order they ran. ``predict`` gives
    the model's time of one record. A prefill that follows ``idle_after`` seconds or more of
    idleness is left out: the model adds its fitted wake-up there, which the ratio would count
    a second time; with ``wake`` (the model's wake-up, seconds) it goes to ``woke`` as
    measured / (modelled + wake). ``decode_batch``: each decode ratio's batch (for
    ``StepSpread.of``)."""
    out: dict[str, list[float]] = {p: [] for p in (*SPREAD_PHASES, "decode_batch", "woke")}
    previous_end: dict[object, float] = {}  # per replica
    for it in sorted(iterations, key=lambda i: (i.get("replica", 0), i["start"])):
        replica = it.get("replica", 0)
        end = previous_end.get(replica)
        woke = end is None or it["start"] - end >= idle_after
        previous_end[replica] = it["start"] + it["seconds"]
        if it["phase"] not in SPREAD_PHASES:
            continue
        if it["phase"] == "prefill" and woke:
            if wake > 0:
                out["woke"].append(it["seconds"] / (predict(it) + wake))
            continue
        modelled = predict(it)
        if modelled > 0:
            out[it["phase"]].append(it["seconds"] / modelled)
            if it["phase"] == "decode":
                out["decode_batch"].append(it["batch"])
    return out
