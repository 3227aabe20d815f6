"""``dlsched inference``: a real LLM service on this machine's CPUs.

- ``inference serve``: N replicas of the tiny causal LM (``dlsched/job/tiny_lm.py``) behind
  an HTTP endpoint, placed by the scheduler core, optionally autoscaled.
- ``inference profile``: its prefill/decode step times into the simulator's profile format.
- ``inference loadgen``: replay a request trace against a running service.
- ``inference validate``: all three, then the simulator on the same trace and profile, and
  the comparison of latency percentiles at several load levels.

(``dlsched serve`` is the training runtime's verb, a contract; hence the group.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.errors import DlschedError
from dlsched.extras import require
from dlsched.wording import count_of

console = Console(stderr=True, soft_wrap=True, emoji=False)
inference_app = typer.Typer(add_completion=False, no_args_is_help=True,
                            help="A real LLM service on CPU: serve, profile, loadgen, "
                                 "validate, resimulate.")

Replicas = Annotated[int, typer.Option("--replicas", min=1, help="Replica processes.")]
Layers = Annotated[int, typer.Option("--layers", min=1, help="Transformer blocks.")]
Width = Annotated[int, typer.Option("--d-model", min=8, help="Model width.")]


def _check_extras(what: str) -> None:
    require("torch", what)
    require("runtime", what, ("fastapi", "uvicorn", "httpx", "pydantic"))


def _settings(layers: int, d_model: int) -> object:
    from dlsched.serving.real.replica import ReplicaSettings

    return ReplicaSettings(d_model=d_model, layers=layers)


def _fail(exc: Exception) -> None:
    console.print(f"[red]error:[/] {escape(str(exc))}")
    raise typer.Exit(2) from None


@inference_app.command("serve")
def serve_command(
        replicas: Replicas = 1,
        port: Annotated[int, typer.Option("--port", help="HTTP port.")] = 8100,
        host: Annotated[str, typer.Option("--host")] = "127.0.0.1",
        policy: Annotated[str, typer.Option("--policy", help="Placement policy.")] = "fifo",
        autoscale_max: Annotated[int | None, typer.Option(
            "--autoscale-max", min=1, help="Autoscale between --replicas and N replicas "
            "(HPA rule on outstanding requests per replica).")] = None,
        target: Annotated[float, typer.Option(
            "--target-outstanding", min=0.1, help="Autoscaling target per replica.")] = 8.0,
        interval: Annotated[float, typer.Option("--interval", min=0.1)] = 2.0,
        layers: Layers = 4, d_model: Width = 256) -> None:
    """Serve the tiny causal LM: POST /v1/completions, GET /health, GET /stats."""
    from dataclasses import replace

    try:
        _check_extras("dlsched inference serve")
        from dlsched.serving.autoscale import AutoscalePolicy
        from dlsched.serving.real.http import run
        from dlsched.serving.real.service import ServiceOptions

        scale = None if autoscale_max is None else AutoscalePolicy(
            replicas, autoscale_max, target, interval, cold_start=0.0, stabilization=30.0)
        options = ServiceOptions(replicas=replicas, policy=policy, autoscale=scale)
        options = replace(options, settings=_settings(layers, d_model))
    except (DlschedError, ValueError) as exc:
        _fail(exc)
    scaling = "" if autoscale_max is None else f", autoscaled up to {autoscale_max}"
    console.print(f"serving tiny-lm on http://{host}:{port} "
                  f"({count_of(replicas, 'replica')}{scaling})")
    run(options, host, port)


@inference_app.command("profile")
def profile_command(
        out: Annotated[Path, typer.Option("--out", help="Profile CSV to write.")] = Path(
            "runs/inference/profile.csv"),
        repeats: Annotated[int, typer.Option("--repeats", min=1)] = 4,
        grid: Annotated[bool, typer.Option(
            "--grid/--no-grid", help="Also time steps on a batch x context grid and mixed "
            "packs for the fitted step model (to OUT-steps.csv).")] = True,
        grid_repeats: Annotated[int, typer.Option("--grid-repeats", min=1)] = 3,
        layers: Layers = 4, d_model: Width = 256) -> None:
    """Measure prefill/decode step times by batch and prompt size (one CPU thread)."""
    try:
        _check_extras("dlsched inference profile")
        from dlsched.perf.inference.fit import held_out, write_steps
        from dlsched.serving.real.profiler import (
            ProfilePlan,
            profile_rows,
            profile_steps,
            write_profile,
        )
        from dlsched.serving.real.validate import steps_path

        settings = _settings(layers, d_model)
        plan = ProfilePlan(repeats=repeats, grid_repeats=grid_repeats)
        rows = profile_rows(settings, plan)  # type: ignore[arg-type]
        points = profile_steps(settings, plan) if grid else []  # type: ignore[arg-type]
    except DlschedError as exc:
        _fail(exc)
    write_profile(rows, out)
    console.print(f"{len(rows)} runs -> {out}")
    if points:
        write_steps(points, steps_path(out))
        console.print(f"{len(points)} step points -> {steps_path(out)}")
        print(json.dumps({"held_out_relative_error": held_out(points)}, indent=2))


def _trace(path: Path | None) -> object:
    from dlsched.data_location import require_data
    from dlsched.serving.requests import read_requests

    if path is None:
        path = require_data("traces/inference/azure-llm-2023/AzureLLMInferenceTrace_conv.csv",
                            "the Azure conversation trace")
    return read_requests(path)


@inference_app.command("loadgen")
def loadgen_command(
        url: Annotated[str, typer.Option("--url")] = "http://127.0.0.1:8100",
        trace: Annotated[Path | None, typer.Option(
            "--trace", help="Request trace (default: Azure conversations 2023).")] = None,
        requests: Annotated[int, typer.Option("--requests", min=1)] = 300,
        rate: Annotated[float, typer.Option("--rate", min=1e-6, help="Rate multiplier.")] = 1.0,
        prompt_scale: Annotated[float, typer.Option("--prompt-scale")] = 1 / 16,
        output_scale: Annotated[float, typer.Option("--output-scale")] = 1 / 8,
        out: Annotated[Path, typer.Option("--out")] = Path("runs/inference/measured.csv"),
        seed: Annotated[int, typer.Option("--seed")] = 0) -> None:
    """Replay a request trace against a service; per-request times to --out."""
    try:
        # an HTTP client only: the service it measures may run anywhere, without torch here
        require("runtime", "dlsched inference loadgen", ("httpx",))
        import asyncio  # here, not at the top: `dlsched simulate` need not load asyncio

        from dlsched.serving.metrics import Slo, service_metrics
        from dlsched.serving.real.loadgen import measured_log, replay_all, shrink, write_measured

        base = shrink(_trace(trace), prompt_scale, output_scale, 512, requests)  # type: ignore[arg-type]
        done = asyncio.run(replay_all(url, base.scaled(rate), seed))
    except DlschedError as exc:
        _fail(exc)
    write_measured(done.rows, out)
    metrics = service_metrics(measured_log(done.rows), Slo(), base.duration / rate)
    metrics["lost"] = done.lost
    print(json.dumps(metrics, indent=2))
    if done.lost:  # what was measured is kept; the exit status says it is not the whole run
        console.print(f"[yellow]warning:[/] {done.lost} of {len(done.rows)} requests lost "
                      f"(no answer: {escape(done.first_loss or '')}); {out} keeps every "
                      "request, the lost ones with status 0")
        raise typer.Exit(1)


@inference_app.command("validate")
def validate_command(
        out: Annotated[Path, typer.Option("--out")] = Path("runs/inference/validate"),
        trace: Annotated[Path | None, typer.Option("--trace")] = None,
        loads: Annotated[str, typer.Option(
            "--loads", help="Busy fractions of the simulated replicas, comma-separated.")
        ] = "0.3,0.7",
        replicas: Replicas = 1,
        requests: Annotated[int, typer.Option("--requests", min=1)] = 300,
        profile: Annotated[Path | None, typer.Option(
            "--profile", help="A profile measured before (default: measure now).")] = None,
        pin: Annotated[bool, typer.Option(
            "--pin/--no-pin", help="Pin each replica to the CPU the core placed it on.")
        ] = False,
        step_model: Annotated[str, typer.Option(
            "--step-model", help="fit: step times fitted on a batch x context grid and "
            "prefill packs; curves: the Splitwise-style table only.")] = "fit",
        steps: Annotated[Path | None, typer.Option(
            "--steps", help="Step points measured before (default: PROFILE-steps.csv "
            "beside --profile, else measure now).")] = None,
        spread_requests: Annotated[int, typer.Option(
            "--spread-requests", min=0, help="Requests after the compared ones replayed at "
            "each load level before and after its compared replay: their steps' measured/"
            "modelled times are the simulator's step spread for that level (0: steps exactly "
            "as modelled).")] = 300,
        spread_draws: Annotated[int, typer.Option(
            "--spread-draws", min=1, help="Simulations pooled per load level, each drawing "
            "the step spread with its own seed (percentiles of the pool).")] = 20,
        layers: Layers = 4, d_model: Width = 256) -> None:
    """Profile, serve, replay at each load level, simulate the same; compare p50/p99."""
    try:
        _check_extras("dlsched inference validate")
        from dlsched.serving.real.validate import ValidatePlan, table, validate

        plan = ValidatePlan(tuple(float(x) for x in loads.split(",")), replicas, requests,
                            profile=profile, pin=pin, step_model=step_model, steps=steps,
                            spread_requests=spread_requests, spread_draws=spread_draws)
        report = validate(_trace(trace), plan, _settings(layers, d_model), out)  # type: ignore[arg-type]
    except (DlschedError, ValueError) as exc:
        _fail(exc)
    print(table(report))
    console.print(f"-> {out / 'comparison.json'}")


@inference_app.command("resimulate")
def resimulate_command(
        run: Annotated[Path, typer.Argument(help="The --out folder of a validate run.")],
        spread_draws: Annotated[int | None, typer.Option(
            "--spread-draws", min=1, help="Pooled spread draws (default: the run's).")] = None,
        ) -> None:
    """Simulate a finished validate run's levels again from its files, with the simulator
    as it is now (nothing served); compare with its measurements as validate does."""
    try:
        from dlsched.serving.real.validate import resimulate, table

        if not (run / "comparison.json").exists():
            raise DlschedError(f"{run}: no comparison.json (not a validate run's folder)")
        report = resimulate(run, spread_draws)
    except KeyError as exc:
        _fail(DlschedError(f"{run / 'comparison.json'}: no field {exc} (written by an older "
                           "dlsched?)"))
    except (DlschedError, ValueError, OSError) as exc:
        _fail(exc)
    print(table(report))
    console.print(f"-> {run / 'resimulated.json'}")


def register(app: typer.Typer) -> None:
    app.add_typer(inference_app, name="inference")
