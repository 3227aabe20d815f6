"""The simulator on a real service's trace and profile: the same replicas, batching rule,
routing and KV budget, step times from the profile the CPU model measured; and the comparison
of its latency percentiles with the measured ones.

Load levels are the simulated replicas' busy fraction (the share of time they run an
iteration): ``rate_for_load`` finds the rate multiplier that gives one by bisection.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from dlsched.perf.inference.curve import Curve
from dlsched.perf.inference.profile import StepProfile
from dlsched.serving.llm_replica import LlmReplica, RequestLog
from dlsched.serving.metrics import per_request
from dlsched.serving.real.replica import ReplicaSettings
from dlsched.serving.requests import RequestTrace
from dlsched.serving.routing import Slot, simulate_slots


def simulate(trace: RequestTrace, profile: StepProfile, settings: ReplicaSettings,
             replicas: int) -> tuple[RequestLog, list[Slot]]:
    engine = replace(settings.engine, max_batch=min(settings.slots, settings.engine.max_batch),
                     prefix_cache=False)
    made = itertools.count()  # each replica draws its own step spread
    return simulate_slots(
        trace, lambda log, start: LlmReplica(profile, settings.kv_blocks, log, engine, start,
                                             salt=next(made)),
        [0.0] * replicas)


def simulate_draws(trace: RequestTrace, profile: StepProfile, settings: ReplicaSettings,
                   replicas: int, draws: int) -> RequestLog:
    """``simulate``'s log; with a step spread, the requests of ``draws`` runs pooled, each
    drawing the spread with its own seed (the profile's, then the next ones): the
    percentiles of the pool estimate the expected distribution, where one draw's p99 is a
    sample of a few requests."""
    spread = profile.spread
    if spread is None or draws <= 1:
        return simulate(trace, profile, settings, replicas)[0]
    logs = [simulate(trace, replace(profile, spread=replace(spread, seed=spread.seed + k)),
                     settings, replicas)[0] for k in range(draws)]
    return pooled(logs)


def pooled(logs: list[RequestLog]) -> RequestLog:
    """The requests of several logs as one (their per-request columns joined)."""
    def joined(name: str) -> np.ndarray:
        return np.concatenate([getattr(log, name) for log in logs])

    return RequestLog(joined("arrival"), joined("prompt"), joined("output"),
                      joined("first_token"), joined("finish"), joined("preemptions"),
                      started=joined("started"))


def busy_fraction(trace: RequestTrace, profile: StepProfile, settings: ReplicaSettings,
                  replicas: int) -> float:
    log, slots = simulate(trace, profile, settings, replicas)
    end = float(np.nanmax(log.finish)) if len(trace) else 0.0
    return sum(s.replica.busy_seconds for s in slots) / max(replicas * end, 1e-9)


def rate_for_load(trace: RequestTrace, profile: StepProfile, settings: ReplicaSettings,
                  replicas: int, load: float, steps: int = 30) -> float:
    """The multiplier of the trace's rate at which the simulated replicas are busy ``load``
    of the time (busy fraction grows with the rate)."""
    if not 0 < load < 1:
        raise ValueError("load must be in (0, 1)")
    low, high = 0.0, 1.0
    while busy_fraction(trace.scaled(high), profile, settings, replicas) < load:
        low, high = high, high * 2
        if high > 1e9:
            raise ValueError("the trace never loads the replicas that much")
    for _ in range(steps):
        mid = (low + high) / 2
        frac = busy_fraction(trace.scaled(mid), profile, settings, replicas)
        low, high = (mid, high) if frac < load else (low, mid)
        if high - low < 5e-3 * high:
            break
    return high


@dataclass(frozen=True)
class Percentiles:
    p50: float | None
    p99: float | None


def percentiles(log: RequestLog) -> dict[str, Percentiles]:
    out = {}
    for name, values in per_request(log).items():
        v = values[~np.isnan(values)]
        out[name] = Percentiles(*(float(np.percentile(v, q)) if len(v) else None
                                  for q in (50, 99)))
    return out


def slowed(profile: StepProfile, factor: float) -> StepProfile:
    """The profile with every step ``factor`` times as long (a replica that got only part of
    its CPU): for telling the simulator's error from the machine's."""
    return replace(profile, prefill=Curve(profile.prefill.xs,
                                          tuple(y * factor for y in profile.prefill.ys),
                                          profile.prefill.log),
                   decode=Curve(profile.decode.xs, tuple(y * factor for y in profile.decode.ys),
                                profile.decode.log),
                   context_slope=profile.context_slope * factor,
                   fit=None if profile.fit is None else profile.fit.scaled(factor))


def relative_error(simulated: float | None, measured: float | None) -> float | None:
    if simulated is None or measured is None or measured == 0 or math.isnan(measured):
        return None
    return (simulated - measured) / measured
