"""Simulated vs measured latency of a real service at several load levels.

1. Profile the CPU model through the serving engine (``profiler.py``) into ``profile.csv``, in
   the bundled profile's format; the simulator's performance model reads it back.
2. Take the first ``requests`` of the request trace, token counts scaled for the CPU model.
3. For each load level: the rate multiplier at which the simulated replicas are that busy;
   replay the trace at that rate against the real service (FastAPI + uvicorn on a local port,
   the load generator in the same event loop, the replicas in their own processes); simulate
   the same trace on the same profile; compare TTFT, TPOT and end-to-end latency p50/p99.

Written: ``profile.csv``, ``measured-<load>.csv`` (per request), ``stats-<load>.json`` (the
service's iterations and replica counts), with a step spread ``spread-<load>.csv``,
``spread-<load>-after.csv`` and ``spread-stats-<load>.json`` (the calibration replays around
the compared one), and ``comparison.json``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.perf.inference.fit import (
    WAKE_AFTER,
    StepPoint,
    combined,
    fit_points,
    held_out,
    read_steps,
    write_steps,
)
from dlsched.perf.inference.profile import StepProfile, read_step_profiles
from dlsched.perf.inference.spread import SPREAD_PHASES, StepSpread, step_ratios
from dlsched.serving.llm_replica import LlmEngineConfig, RequestLog
from dlsched.serving.real.compare import (
    percentiles,
    rate_for_load,
    relative_error,
    simulate_draws,
    slowed,
)
from dlsched.serving.real.loadgen import (
    measured_log,
    read_measured,
    replay,
    replayed_trace,
    shrink,
    write_measured,
)
from dlsched.serving.real.pool import set_process_affinity
from dlsched.serving.real.profiler import (
    ProfilePlan,
    profile_rows,
    profile_steps,
    write_profile,
)
from dlsched.serving.real.replica import ReplicaSettings
from dlsched.serving.real.service import ServiceOptions
from dlsched.serving.requests import RequestTrace


@dataclass(frozen=True)
class ValidatePlan:
    loads: tuple[float, ...] = (0.3, 0.7)
    replicas: int = 1
    requests: int = 300
    prompt_scale: float = 1 / 16
    output_scale: float = 1 / 8
    seed: int = 0
    profile: Path | None = None  # measured before; None: measure now
    pin: bool = False  # a shared machine's busy core would hold a pinned replica back
    calibration: int = 50  # sequential requests measuring the HTTP path's own delay
    step_model: str = "fit"  # "fit": least squares on the step grid; "curves": the table's
    steps: Path | None = None  # step points measured before; None: beside ``profile`` or now
    # requests after the compared ones, replayed at each load level just before its compared
    # replay and again just after it (bracketing the machine's drift): the served steps'
    # measured / modelled times give the simulator's step spread (``perf/inference/spread.py``)
    # for that level; 0: steps exactly as modelled
    spread_requests: int = 300
    # simulations pooled per level, each drawing the spread with its own seed: percentiles
    # of the expected distribution, not of one draw (``compare.simulate_draws``)
    spread_draws: int = 20


STEP_MODELS = ("fit", "curves")


PROFILE_CPU = 0  # where the core places the first replica on an idle node (pinned runs)


@contextmanager
def _pinned(cpus: set[int] | None) -> Iterator[None]:
    """This process on ``cpus`` for the block (the profiler under the replica's pinning)."""
    if cpus is None or not hasattr(os, "sched_setaffinity"):
        yield
        return
    before = os.sched_getaffinity(0)
    set_process_affinity({c % (os.cpu_count() or 1) for c in cpus})
    try:
        yield
    finally:
        set_process_affinity(before)


# re-measured after the replay: a few grid points, to tell a machine that changed speed
DRIFT_PLAN = ProfilePlan(grid_batches=(1, 4, 16), grid_contexts=(64,), grid_repeats=2,
                         mixed_runs=(), wake_runs=0)


def profile_drift(before: list[StepPoint], after: list[StepPoint]) -> dict[str, float | None]:
    """Median ratio after / before of the grid points measured both times, by phase: near 1
    when the machine ran the model as fast after the replay as when profiled; far from it,
    the comparison measured the machine's change, not the simulator's error."""
    was = {(p.phase, p.batch, p.tokens, p.square_tokens): p.seconds
           for p in combined(before) if p.kind == "grid"}
    out: dict[str, float | None] = {}
    for phase in ("prefill", "decode"):
        ratios = [p.seconds / was[key] for p in combined(after) if p.kind == "grid"
                  and p.phase == phase
                  and (key := (p.phase, p.batch, p.tokens, p.square_tokens)) in was]
        out[phase] = float(np.median(ratios)) if ratios else None
    return out


def load_profile(path: Path, settings: ReplicaSettings,
                 steps: Path | None = None) -> StepProfile:
    """The CPU model's profile; with ``steps`` (a step-points file), its fitted step times."""
    profile = read_step_profiles(path)[(settings.model_name, "cpu", 1)]
    if steps is None:
        return profile
    return replace(profile, fit=fit_points(read_steps(steps)))


def steps_path(profile: Path) -> Path:
    """Where the step points measured with a profile are kept: ``NAME-steps.csv``."""
    return profile.with_name(profile.stem + "-steps.csv")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def serve_and_replay(options: ServiceOptions, traces: list[RequestTrace], seed: int,
                           calibration: int = 0, ready_timeout: float = 120.0
                           ) -> tuple[tuple[list[Any], dict], list[tuple[list[Any], dict]]]:
    """Start the service on a local port; send ``calibration`` requests one at a time; replay
    each trace in turn (after the last one's requests all finished). Returns the calibration
    rows with the service's iterations for them, and each replay's rows with the service's
    stats for it."""
    import httpx
    import uvicorn

    from dlsched.serving.real.http import create_app

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(options), host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve())
    url = f"http://127.0.0.1:{port}"
    out = []
    try:
        async with httpx.AsyncClient(base_url=url, timeout=30.0) as client:
            await _wait_ready(client, options.replicas, ready_timeout, task)

            async def served(trace: RequestTrace, seed: int, lead: float
                             ) -> tuple[list[Any], dict]:
                began = time.time()
                rows = await replay(url, trace, seed, lead=lead)
                stats = (await client.get("/stats")).json()
                stats["iterations"] = [it for it in stats["iterations"]
                                       if it["start"] >= began]
                stats["began"] = began
                return rows, stats

            alone: tuple[list[Any], dict] = ([], {"iterations": []})
            for i in range(calibration):
                one = RequestTrace.of("calibration", [0.0], [CALIBRATION_PROMPT],
                                      [CALIBRATION_OUTPUT])
                rows, stats = await served(one, seed + 1000 + i, 0.02)
                alone[0].extend(rows)
                alone[1]["iterations"].extend(stats["iterations"])
            for trace in traces:
                out.append(await served(trace, seed, 0.5))
    finally:
        server.should_exit = True
        await task
    return alone, out


CALIBRATION_PROMPT, CALIBRATION_OUTPUT = 32, 4


@dataclass(frozen=True)
class FrontEnd:
    """The HTTP path's own delays (seconds), from requests sent one at a time to an idle
    service: ``ingress`` from the client's send to the start of the request's prefill
    (its first token less the profile's prefill time), ``egress`` from the replica's last
    token to the client's receipt. The simulator models the engine, not this path."""

    ingress: float
    egress: float

    @classmethod
    def of(cls, rows: list[Any], profile: StepProfile,
           iterations: list[dict[str, Any]] | None = None) -> FrontEnd:
        """From the calibration requests (sent one at a time) and, when given, the service's
        iterations meanwhile: each request's own prefill, as measured, comes off its time to
        first token; without them (or when they do not pair one prefill to a request) the
        profile's prefill with the fitted wake-up does."""
        ok = [r for r in rows if r.status == 200]
        if not ok:
            return cls(0.0, 0.0)
        prefills = sorted((it for it in iterations or () if it["phase"] == "prefill"),
                          key=lambda it: it["start"])
        if len(prefills) == len(rows) and len(ok) == len(rows):
            ingress = float(np.median([r.first_token - r.sent - it["seconds"]
                                       for r, it in zip(rows, prefills, strict=True)]))
        else:
            # each one finds the replica idle: its prefill pays the fitted wake-up too
            prefill = profile.prefill_seconds(CALIBRATION_PROMPT) + (
                profile.fit.wake if profile.fit is not None else 0.0)
            ingress = float(np.median([r.first_token - r.sent for r in ok])) - prefill
        egress = float(np.median([r.received - r.finished for r in ok]))
        return cls(max(0.0, ingress), max(0.0, egress))

    def applied(self, log: RequestLog) -> RequestLog:
        """A simulated log as the client would see it through this path."""
        return replace(log, first_token=log.first_token + self.ingress,
                       finish=log.finish + self.ingress + self.egress)


async def _wait_ready(client: Any, replicas: int, timeout: float, task: asyncio.Task) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if task.done():
            task.result()
            raise RuntimeError("the service stopped before it was ready")
        try:
            health = (await client.get("/health")).json()
            if health["ready"] >= replicas:
                return
        except Exception:  # noqa: BLE001 - not listening yet
            pass
        await asyncio.sleep(0.2)
    raise RuntimeError(f"replicas not ready after {timeout:.0f} s")


def validate(trace: RequestTrace, plan: ValidatePlan, settings: ReplicaSettings, out: Path,
             profile_plan: ProfilePlan | None = None) -> dict[str, Any]:
    if plan.step_model not in STEP_MODELS:
        raise ValueError(f"step model must be one of {', '.join(STEP_MODELS)}, "
                         f"not {plan.step_model!r}")
    out.mkdir(parents=True, exist_ok=True)
    profile_path, steps = plan.profile, plan.steps
    load_before_profile = os.getloadavg()
    profiling_began = time.time()
    with _pinned({PROFILE_CPU} if plan.pin else None):
        if profile_path is None:
            profile_path = out / "profile.csv"
            write_profile(profile_rows(settings, profile_plan or ProfilePlan()), profile_path)
        if plan.step_model == "fit" and steps is None:
            steps = steps_path(profile_path)
            if plan.profile is None or not steps.exists():
                steps = steps_path(out / "profile.csv")
                write_steps(profile_steps(settings, profile_plan or ProfilePlan()), steps)
    profiling_seconds = time.time() - profiling_began
    profile = load_profile(profile_path, settings,
                           steps if plan.step_model == "fit" else None)
    fit_error = held_out(read_steps(steps)) if steps is not None and \
        plan.step_model == "fit" else None
    both = shrink(trace, plan.prompt_scale, plan.output_scale, settings.max_context,
                  plan.requests + plan.spread_requests)
    base, spread_trace = split(both, min(plan.requests, len(both)))
    rates = [rate_for_load(base, profile, settings, plan.replicas, load) for load in plan.loads]
    traces = [base.scaled(rate) for rate in rates]
    spread_runs = [spread_trace.scaled(rate) for rate in rates] if len(spread_trace) else []
    options = ServiceOptions(replicas=plan.replicas, settings=settings, pin=plan.pin)
    began = time.time()
    order = [t for s, c in zip(spread_runs, traces, strict=False) for t in (s, c, s)] or traces
    alone, replays = asyncio.run(serve_and_replay(options, order, plan.seed, plan.calibration))
    runs = replays[1::3] if spread_runs else replays
    front = FrontEnd.of(alone[0], profile, alone[1]["iterations"])
    drift = None
    if steps is not None and plan.step_model == "fit":
        with _pinned({PROFILE_CPU} if plan.pin else None):
            drift = profile_drift(read_steps(steps), profile_steps(settings, DRIFT_PLAN))
    levels = []
    for i, (load, rate, tr, (rows, stats)) in enumerate(
            zip(plan.loads, rates, traces, runs, strict=True)):
        write_measured(rows, out / f"measured-{load:g}.csv")
        (out / f"stats-{load:g}.json").write_text(json.dumps(stats) + "\n")
        calibration = None
        if spread_runs:
            (before, before_stats), (after, after_stats) = replays[3 * i], replays[3 * i + 2]
            write_measured(before, out / f"spread-{load:g}.csv")
            write_measured(after, out / f"spread-{load:g}-after.csv")
            (out / f"spread-stats-{load:g}.json").write_text(
                json.dumps({"before": before_stats, "after": after_stats}) + "\n")
            calibration = (before_stats["iterations"] + after_stats["iterations"],
                           2 * len(spread_trace))
        level = _compared(load, rate, tr, rows, stats["iterations"], calibration, profile,
                          settings, plan.replicas, front, plan.spread_draws, plan.seed)
        level["at_measured_speed"] = at_measured_speed(level, tr, rows, profile, settings,
                                                       plan.replicas, front)
        levels.append(level)
    report = {"plan": {k: str(v) if isinstance(v, Path) else v
                       for k, v in asdict(plan).items()},
              "settings": asdict(settings), "trace": trace.name, "profile": str(profile_path),
              "steps": None if steps is None else str(steps),
              "step_fit": None if profile.fit is None else asdict(profile.fit),
              "step_fit_held_out": fit_error, "profiling_seconds": profiling_seconds,
              "levels": levels, "front_end": asdict(front),
              "loadavg_before_profile": load_before_profile,
              "profiled_on_cpus": [PROFILE_CPU] if plan.pin else None,
              "replica_cpus": runs[0][1].get("cpus") if runs else None,
              "loadavg_after": os.getloadavg(), "replay_seconds": time.time() - began,
              "profile_drift": drift}
    (out / "comparison.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return report


def resimulate(out: Path, draws: int | None = None) -> dict[str, Any]:
    """Simulate a finished validation's levels again from the files it wrote in ``out``
    (the compared and calibration replays, the profile), with the simulator as it is now,
    nothing served: for trying a change of the model on measured runs. ``draws``: the pooled
    spread draws (default: the run's). Writes ``out/resimulated.json`` and returns it."""
    report = json.loads((out / "comparison.json").read_text())
    plan, given = report["plan"], dict(report["settings"])
    settings = ReplicaSettings(**{**given, "engine": LlmEngineConfig(**given["engine"])})
    steps = out / "profile-steps.csv" if plan["step_model"] == "fit" else None
    profile = load_profile(out / "profile.csv", settings, steps)
    front, replicas = FrontEnd(**report["front_end"]), int(plan["replicas"])
    draws = int(plan.get("spread_draws", 1)) if draws is None else draws
    levels = []
    for old in report["levels"]:
        load, rate = old["load"], old["rate_multiplier"]
        rows = read_measured(out / f"measured-{load:g}.csv")
        trace = replayed_trace(rows, report["trace"])
        saved, calibration = out / f"spread-stats-{load:g}.json", None
        if saved.exists():
            stats = json.loads(saved.read_text())
            calibration = (stats["before"]["iterations"] + stats["after"]["iterations"],
                           2 * int(plan["spread_requests"]))
        served = json.loads((out / f"stats-{load:g}.json").read_text())["iterations"]
        levels.append(_compared(load, rate, trace, rows, served, calibration, profile,
                                settings, replicas, front, draws, int(plan["seed"])))
    result = {"from": str(out), "levels": levels}
    (out / "resimulated.json").write_text(json.dumps(result, indent=2, default=str) + "\n")
    return result


def _compared(load: float, rate: float, trace: RequestTrace, rows: list[Any],
              served: list[dict[str, Any]],
              calibration: tuple[list[dict[str, Any]], int] | None, profile: StepProfile,
              settings: ReplicaSettings, replicas: int, front: FrontEnd, draws: int,
              seed: int) -> dict[str, Any]:
    """One level's comparison: the simulated errors, the served iterations' measured /
    profiled ratios and, with ``calibration`` (the calibration replays' iterations and how
    many requests they served), the step spread they give and the errors without it."""
    level_profile, spread = profile, None
    if calibration is not None:
        spread = measured_spread(calibration[0], profile, seed)
        level_profile = replace(profile, spread=spread)
    level = _level(load, rate, trace, rows, level_profile, settings, replicas, front, draws)
    level.update(step_time_ratios(served, profile))
    if spread is not None and calibration is not None:
        level["step_spread"] = {"requests": calibration[1], **spread.summary()}
        level["without_spread"] = {
            k: v["error"] for k, v in _level(load, rate, trace, rows, profile, settings,
                                             replicas, front).items()
            if isinstance(v, dict)}
        level["spread_draws"] = draws
    return level


def split(trace: RequestTrace, n: int) -> tuple[RequestTrace, RequestTrace]:
    """The first ``n`` requests, and the rest with their arrivals from 0."""
    rest = trace.arrival[n:]
    return (RequestTrace(trace.name, trace.arrival[:n], trace.prompt[:n], trace.output[:n]),
            RequestTrace(f"{trace.name}/from{n}", rest - (rest[0] if len(rest) else 0.0),
                         trace.prompt[n:], trace.output[n:]))


def measured_spread(iterations: list[dict[str, Any]], profile: StepProfile,
                    seed: int) -> StepSpread:
    """The served steps' measured / modelled times (a prefill after idling left out: the
    simulator adds the fitted wake-up there, and their measured / (modelled + wake-up) are
    the spread's ``woke`` ratios) as the simulator's step spread, decode steps corrected per
    batch class (``StepSpread.of``)."""
    ratios = step_ratios(iterations, lambda it: _predicted(it, profile), WAKE_AFTER,
                         profile.fit.wake if profile.fit is not None else 0.0)
    for phase in SPREAD_PHASES:
        if not ratios[phase]:
            raise ValueError(f"the spread replay ran no {phase} step to measure")
    return StepSpread.of(ratios, seed)


def _level(load: float, rate: float, trace: RequestTrace, rows: list[Any],
           profile: StepProfile, settings: ReplicaSettings, replicas: int,
           front: FrontEnd, draws: int = 1) -> dict[str, Any]:
    failed = sum(r.status != 200 for r in rows)
    measured = percentiles(measured_log(rows))
    sim_log = simulate_draws(trace, profile, settings, replicas, draws)
    raw = percentiles(sim_log)
    simulated = percentiles(front.applied(sim_log))
    lag = sorted(r.sent - r.scheduled for r in rows)
    level: dict[str, Any] = {"load": load, "rate_multiplier": rate,
                             "rps": len(trace) / max(trace.duration, 1e-9),
                             "requests": len(trace), "failed": failed,
                             "send_lag_p99": lag[int(0.99 * (len(lag) - 1))] if lag else None}
    for name in ("ttft", "tpot", "latency"):
        for q in ("p50", "p99"):
            m, s = getattr(measured[name], q), getattr(simulated[name], q)
            e = getattr(raw[name], q)
            level[f"{name}_{q}"] = {"measured": m, "simulated": s,
                                    "error": relative_error(s, m), "engine_only": e,
                                    "engine_only_error": relative_error(e, m)}
    return level


def step_time_ratios(iterations: list[dict[str, Any]], profile: StepProfile) -> dict[str, Any]:
    """How the service's own iterations compared with the profile's times for them (median
    and p90 of measured / profiled): above 1, the replica ran slower than when profiled
    (another process took its CPU), which the simulator cannot know."""
    out: dict[str, Any] = {}
    for phase in ("prefill", "decode"):
        ratios = [it["seconds"] / _predicted(it, profile)
                  for it in iterations if it["phase"] == phase]
        out[f"{phase}_time_ratio_p50"] = float(np.median(ratios)) if ratios else None
        out[f"{phase}_time_ratio_p90"] = float(np.percentile(ratios, 90)) if ratios else None
    return out


def _predicted(it: dict[str, Any], profile: StepProfile) -> float:
    """The profile's time for one of the service's iterations (the engine records a decode
    step's KV tokens after its token: those attended are ``batch`` fewer)."""
    if it["phase"] == "decode":
        return profile.decode_seconds(it["batch"], it["tokens"] - it["batch"])
    if profile.fit is not None and it.get("square_tokens"):
        return profile.fit.prefill(it["batch"], it["tokens"], it["square_tokens"])
    return profile.prefill_seconds(it["tokens"])


def at_measured_speed(level: dict[str, Any], trace: RequestTrace, rows: list[Any],
                      profile: StepProfile, settings: ReplicaSettings, replicas: int,
                      front: FrontEnd) -> dict[str, Any] | None:
    """A diagnostic, not the result: the simulated errors again with every step time scaled
    by the run's measured/profiled decode ratio (the replica's speed during the run, which
    other processes on the machine set); what is left is the simulator's own error."""
    factor = level.get("decode_time_ratio_p50")
    if factor is None:
        return None
    faster = _level(level["load"], level["rate_multiplier"], trace, rows,
                    slowed(profile, factor), settings, replicas, front)
    return {"factor": factor, **{k: v["error"] for k, v in faster.items()
                                 if isinstance(v, dict)}}


def table(report: dict[str, Any]) -> str:
    """The comparison as a Markdown table (ms; error = simulated / measured - 1), and the
    profile's drift over the run when measured."""
    lines = ["| load | req/s | metric | measured p50 | simulated p50 | error | measured p99 "
             "| simulated p99 | error | decode measured/profiled p50 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for level in report["levels"]:
        for name in ("latency", "ttft", "tpot"):
            cells = []
            for q in ("p50", "p99"):
                v = level[f"{name}_{q}"]
                cells += [_ms(v["measured"]), _ms(v["simulated"]), _pct(v["error"])]
            ratio = level.get("decode_time_ratio_p50")
            cells.append("-" if ratio is None else f"{ratio:.2f}")
            lines.append(f"| {level['load']:g} | {level['rps']:.1f} | {name} | "
                         + " | ".join(cells) + " |")
    for level in report["levels"]:
        spread = level.get("step_spread")
        if spread:
            lines.append(
                f"\nload {level['load']:g}: step spread from {spread['requests']} other "
                f"requests, measured/modelled decode p50 {spread['decode_p50']:.2f} "
                f"p90 {spread['decode_p90']:.2f}, prefill p50 {spread['prefill_p50']:.2f}, "
                f"runs of {spread['block_steps']:g} steps; "
                "latency error without it: p50 "
                f"{_pct(level['without_spread']['latency_p50'])}, p99 "
                f"{_pct(level['without_spread']['latency_p99'])}")
    drift = report.get("profile_drift")
    if drift:
        lines.append("\nprofile re-measured after the replay / before: " + ", ".join(
            f"{k} {v:.2f}" for k, v in drift.items() if v is not None))
    return "\n".join(lines)


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1e3:.1f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:+.1f}%"
