"""One service run: check a service against its hardware, serve its trace on replicas, measure.

The request-level part is independent of the cluster once each replica's start time is known
(``serve``); ``dlsched simulate --services`` gets those times from the scheduler core, which
places the replicas beside any training jobs (``serving/cluster_run.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dlsched.errors import ConfigError
from dlsched.perf.inference.batch_latency import BatchLatency
from dlsched.perf.inference.memory import kv_cache
from dlsched.perf.inference.profile import StepProfile, step_profile, step_profiles
from dlsched.serving.autoscale import Autoscaler
from dlsched.serving.dnn_replica import DnnReplica
from dlsched.serving.llm_replica import LlmReplica, RequestLog
from dlsched.serving.metrics import service_metrics
from dlsched.serving.requests import RequestTrace, read_requests
from dlsched.serving.routing import (
    PlanEntry,
    Replica,
    ReplicaFactory,
    Schedule,
    Slot,
    held_end,
    simulate_slots,
)
from dlsched.serving.service import ServiceKind, ServiceSpec


@dataclass
class ServiceOutcome:
    spec: ServiceSpec
    log: RequestLog
    replicas: list[Replica]
    starts: list[float]
    metrics: dict[str, Any]
    cpu_seconds: float
    slots: list[Slot]


def service_trace(spec: ServiceSpec) -> RequestTrace:
    """The service's requests: a request trace, or requests generated from ServeGen rates
    (token counts drawn from ``spec.lengths``), ``rate_scale`` times as fast, cut to
    ``duration`` seconds."""
    from pathlib import Path

    from dlsched.serving.servegen import generate, looks_like_servegen

    path = Path(spec.trace)
    if path.exists() and looks_like_servegen(path):
        if spec.lengths is None:
            raise ConfigError(f"{path}: ServeGen rates carry no token counts; give "
                              "'lengths: TRACE' (an Azure or Mooncake trace to draw them from)")
        # the rates themselves are scaled: the whole time series keeps its shape
        trace = generate(path, read_requests(spec.lengths), spec.seed,
                         spec.duration or 3600.0, spec.rate_scale)
    else:
        trace = read_requests(spec.trace).scaled(spec.rate_scale)
    return trace if spec.duration is None else trace.window(spec.duration)


def infeasible_slo(spec: ServiceSpec, trace: RequestTrace) -> tuple[str, str] | None:
    """(SLO key, why) when even an idle replica misses the SLO for the trace's median request,
    naming the fastest measured hardware for the model; None when it can be met."""
    prompt = float(np.median(trace.prompt)) if len(trace) else 1.0
    if spec.kind is ServiceKind.DNN:
        assert spec.dnn is not None
        alone = spec.dnn.latency[0][1]
        if spec.slo.latency is not None and spec.slo.latency < alone:
            return "latency_ms", (f"{spec.slo.latency * 1e3:g} ms is below the measured "
                                  f"latency of a batch of {spec.dnn.latency[0][0]} "
                                  f"({alone * 1e3:g} ms)")
        return None
    checks = (("ttft_ms", spec.slo.ttft, lambda p: p.prefill_seconds(prompt), "prefill of"),
              ("tpot_ms", spec.slo.tpot, lambda p: p.decode_seconds(1, prompt), "decode step of"))
    here = step_profile(spec.model, spec.gpu, spec.tp)
    for key, bound, cost, what in checks:
        if bound is None or cost(here) <= bound:
            continue
        options = [p for (m, _, _), p in step_profiles().items() if m == spec.model.lower()]
        best = min(options, key=cost)
        where = f"{best.gpu} TP-{best.tp}: {cost(best) * 1e3:.1f} ms"
        verdict = ("no measured hardware meets it" if cost(best) > bound
                   else f"the fastest measured hardware would ({where})")
        return key, (f"{bound * 1e3:g} ms is below the {what} one median request "
                     f"({prompt:.0f} prompt tokens) alone on {spec.tp} x {spec.gpu}: "
                     f"{cost(here) * 1e3:.1f} ms; {verdict}")
    return None


def replica_factory(spec: ServiceSpec) -> ReplicaFactory:
    if spec.kind is ServiceKind.DNN:
        assert spec.dnn is not None
        latency = BatchLatency.from_table(dict(spec.dnn.latency))
        dnn = spec.dnn
        return lambda log, start: DnnReplica(latency, log, dnn.max_batch, dnn.timeout, start)
    profile: StepProfile = step_profile(spec.model, spec.gpu, spec.tp)
    blocks = kv_cache(spec.model, spec.gpu, spec.tp).blocks
    return lambda log, start: LlmReplica(profile, blocks, log, spec.engine, start)


def serve(spec: ServiceSpec, trace: RequestTrace, starts: Sequence[float],
          prefill_starts: Sequence[float] | None = None,
          plan: Sequence[PlanEntry] | None = None,
          stops: Sequence[float | None] = (), ended: Sequence[bool] = ()) -> ServiceOutcome:
    """Serve ``trace`` on replicas started at ``starts`` (and those the service's autoscaling
    policy adds); metrics include GPU-hours (each replica from its request to the end of the
    run, or until it was retired and drained). A disaggregated service's ``starts`` are its
    decode replicas', ``prefill_starts`` its prefill replicas' (None: all at 0). ``plan``
    replays a schedule of replicas (requested, ready, retired, stopped) instead of
    autoscaling; an empty one (no replica placed) serves nothing. ``stops``: when the
    scheduler stopped the replica started at ``starts[k]`` (None: never), its requests then
    lost (``lost``); ``ended[k]``: that was its job's end, not a stop (``replica_stops``)."""
    if spec.prefill is not None:
        return serve_split(spec, trace, Schedule(tuple(starts), tuple(stops), tuple(plan or ()),
                                                 tuple(ended)),
                           None if prefill_starts is None else Schedule(tuple(prefill_starts)))
    began = time.process_time()
    scaler = None if spec.autoscale is None or plan is not None else Autoscaler(spec.autoscale)
    log, slots = simulate_slots(trace, replica_factory(spec), list(starts), scaler, plan or (),
                                stops, ended)
    cpu = time.process_time() - began
    metrics = service_metrics(log, spec.slo, trace.duration)  # no rate over 0 s: None
    finished = log.finish[~np.isnan(log.finish)]
    end = max(trace.duration, float(finished.max()) if len(finished) else 0.0)
    last = held_end(slots, end)
    held = sum(max(0.0, s.held_until(last) - s.requested) for s in slots)
    replicas = [s.replica for s in slots]
    busy = sum(r.busy_seconds for r in replicas)
    metrics.update({
        "replicas": len(slots), "tensor_parallel": spec.tp, "gpu": spec.gpu,
        "model": spec.model, "kind": spec.kind.value, "slo": spec.slo.describe(),
        "gpu_hours": held * spec.tp / 3600, "busy_fraction": busy / held if held else None,
        "served_until_s": end,
        "replicas_mean": held / last if last else None,
        "replicas_peak": _peak(slots, last),
        "scale_events": len(slots) - len(starts) + sum(s.retired is not None for s in slots),
        "rejected": sum(len(r.rejected) for r in replicas),
        "lost": sum(len(r.lost) for r in replicas),
        "replica_stops": sum(s.stopped_early for s in slots),
        "prefix_hit_rate": _prefix_hits(replicas, trace),
        "peak_batch": max((r.peak_batch for r in replicas), default=0),
        "kv_peak_fraction": max((getattr(r, "peak_blocks", 0) / r.blocks for r in replicas
                                 if hasattr(r, "blocks")), default=None),
        "iterations": sum(r.iterations for r in replicas),
        "trace": trace.name, "trace_seconds": trace.duration, "cpu_seconds": cpu})
    return ServiceOutcome(spec, log, replicas, [s.requested for s in slots], metrics, cpu,
                          slots)


def serve_split(spec: ServiceSpec, trace: RequestTrace, decode: Schedule,
                prefill: Schedule | None) -> ServiceOutcome:
    """A disaggregated service: its decode pool's replicas serve on ``decode``, its prefill
    pool's on ``prefill`` (None: all of them from 0, never stopped)."""
    from dlsched.serving.disaggregated import Pool, serve_disaggregated

    assert spec.prefill is not None
    p = spec.prefill
    began = time.process_time()
    metrics = serve_disaggregated(
        spec.model, trace, Pool(p.gpu, p.tp, p.replicas, prefill),
        Pool(spec.gpu, spec.tp, len(decode.starts), decode), spec.slo, spec.engine)
    cpu = time.process_time() - began
    metrics.update({"replicas": len(decode.starts), "prefill_replicas":
                    p.replicas if prefill is None else len(prefill.starts),
                    "prefill_gpu": p.gpu, "prefill_tensor_parallel": p.tp,
                    "tensor_parallel": spec.tp, "gpu": spec.gpu, "model": spec.model,
                    "slo": spec.slo.describe(), "trace": trace.name,
                    "trace_seconds": trace.duration, "cpu_seconds": cpu})
    log = RequestLog.empty(trace.arrival, trace.prompt, trace.output)
    return ServiceOutcome(spec, log, [], list(decode.starts), metrics, cpu, [])


def _prefix_hits(replicas: list[Replica], trace: RequestTrace) -> float | None:
    """Share of prompt tokens served from the prefix cache (None without prefix hashes)."""
    caches = [c for r in replicas if (c := getattr(r, "cache", None)) is not None]
    if not caches:
        return None
    return sum(c.hit_tokens for c in caches) / max(1, int(trace.prompt.sum()))


def _peak(slots: list[Slot], end: float) -> int:
    """Most replicas holding GPUs at once."""
    events = sorted([(s.requested, 1) for s in slots]
                    + [(s.held_until(end), -1) for s in slots])
    count = peak = 0
    for _, step in events:
        count += step
        peak = max(peak, count)
    return peak


def replicas_for_slo(spec: ServiceSpec, trace: RequestTrace, target: float = 0.99,
                     most: int = 256) -> tuple[int | None, list[tuple[int, float]]]:
    """The fewest replicas (all up from t=0) whose SLO attainment reaches ``target``: doubling,
    then bisection. Attainment grows with replicas under join-the-shortest-queue routing, but
    not strictly (routing is discrete: on 120 s of the Azure conversation trace 3 replicas
    reach 100% and 4 reach 99.8%): the answer is the count bisection settles on, above every
    count tried that fell short, not a smaller one that met the target by chance below one
    that did not; a plan that holds up. Returns it (None when ``most`` do not) and every
    (replicas, attainment) tried."""
    tried: dict[int, float] = {}

    static = replace(spec, autoscale=None)

    def attained(n: int) -> float:
        if n not in tried:
            tried[n] = float(serve(static, trace, [0.0] * n).metrics["slo_attainment"] or 0.0)
        return tried[n]

    high = 1
    while attained(high) < target:
        if high >= most:
            return None, sorted(tried.items())
        high = min(2 * high, most)
    low = high // 2  # attained(low) < target, or low == 0
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if attained(mid) >= target else (mid, high)
    return high, sorted(tried.items())
