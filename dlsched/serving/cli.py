"""The services side of the command line: ``dlsched simulate --services FILE`` and
``dlsched replicas FILE`` (the fewest replicas meeting an SLO-attainment target)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.errors import DlschedError
from dlsched.run_config import RunConfig
from dlsched.wording import count_of, duration_text

if TYPE_CHECKING:  # the CLI imports the simulator lazily
    from dlsched.cluster.cluster import Cluster
    from dlsched.experiment import RunOutcome
    from dlsched.serving.services_file import ServicesFile
    from dlsched.workload.trace import Trace

console = Console(stderr=True, soft_wrap=True, emoji=False)
SERVICE_PREFIX = "service:"  # a replica's job id: service:NAME/K
replicas_app = typer.Typer(add_completion=False)


def simulate_services(run: RunConfig, trace_given: bool, cluster_given: bool) -> None:
    from dlsched.serving.cluster_run import services_outcome

    services, cluster, training = _inputs(run, trace_given, cluster_given)
    out = Path(run.out)
    out.mkdir(parents=True, exist_ok=True)
    report, outcome = services_outcome(services, cluster, run, run.policies[0], training, out)
    _name_only_what_was_given(out / "config.yaml", trace_given, cluster_given)
    _print(report, out)
    _print_training(outcome, out)


def compare_services(run: RunConfig, trace_given: bool, cluster_given: bool) -> None:
    """``dlsched compare --services``: each policy's run of the services (and training jobs)
    in ``--out/POLICY``; ``--out/services.json`` holds every policy's services report,
    ``--out/report.html`` compares the policies' core runs (replicas as jobs)."""
    from dlsched.experiment import write_comparison
    from dlsched.serving.cluster_run import services_outcome

    services, cluster, training = _inputs(run, trace_given, cluster_given)
    out = Path(run.out)
    reports, outcomes = {}, []
    for policy in run.policies:
        (out / policy).mkdir(parents=True, exist_ok=True)
        report, outcome = services_outcome(services, cluster, run, policy, training,
                                           out / policy)
        _name_only_what_was_given(out / policy / "config.yaml", trace_given, cluster_given)
        _print(report, out / policy, f"{policy}: ")
        _print_training(outcome, out / policy, f"{policy}: ")
        reports[policy] = report
        outcomes.append(outcome)
    (out / "services.json").write_text(json.dumps(reports, indent=2, sort_keys=True) + "\n")
    title = f"dlsched: {', '.join(run.policies)} on services {run.services} / {cluster.name}"
    console.print(f"report: {escape(str(write_comparison(outcomes, out, title, run)))}")


def _inputs(run: RunConfig, trace_given: bool, cluster_given: bool
            ) -> tuple[ServicesFile, Cluster, Trace | None]:
    """The services file, the cluster (the services' own nodes unless one is given) and the
    training trace, if any."""
    from dlsched.experiment import out_checked

    assert run.services is not None
    with out_checked(Path(run.out)):  # nothing ran on a bad input: no empty folder left
        return _checked_inputs(run, trace_given, cluster_given)


def _checked_inputs(run: RunConfig, trace_given: bool, cluster_given: bool
                    ) -> tuple[ServicesFile, Cluster, Trace | None]:
    """``_inputs``' reading and checks, the output folder made."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.experiment import check_run, input_warnings, load_trace
    from dlsched.serving.cluster_run import with_service_nodes
    from dlsched.serving.services_file import load_services

    assert run.services is not None
    services = load_services(run.services)
    if run.tenants is not None:
        _check_queues(services, run.tenants)
    if cluster_given:
        cluster = resolve_cluster(run.cluster)
        _check_gpu_types(services, cluster)
    else:
        base = resolve_cluster(run.cluster) if trace_given else None
        cluster = with_service_nodes(base, services)
    training = load_trace(run, cluster) if trace_given else None
    if training is not None:
        for warning in input_warnings(run, training, cluster):
            console.print(f"[yellow]warning:[/] {escape(warning)}")
    check_run(run)  # every policy name and option before the first run
    return services, cluster, training


def _check_queues(services: ServicesFile, tenants_file: str) -> None:
    """Each service's queue is one the tenant file knows: a replica of an unknown queue is
    never admitted (it served nothing, 0/N replicas placed, without a word)."""
    from dlsched.tenancy.loader import load_tenants

    tenants = load_tenants(tenants_file)
    for i, s in enumerate(services.services):
        if tenants.cluster_queue_of(s.queue) is None:
            raise services.error(i, "queue", f"{s.queue!r} is no local or cluster queue of "
                                 f"the tenant file {tenants.source} (set queue: to one)")


def _check_gpu_types(services: ServicesFile, cluster: Cluster) -> None:
    """Each service's GPU type, and its prefill pool's, is one the cluster has."""
    for i, s in enumerate(services.services):
        wanted = [("gpu", s.gpu)]
        if s.prefill is not None:
            wanted.append(("disaggregation.prefill_gpu", s.prefill.gpu))
        for key, gpu in wanted:
            if gpu not in cluster.type_names:
                raise services.error(i, key, f"cluster {cluster.name} has no {gpu} GPUs "
                                     f"(it has: {', '.join(cluster.type_names)})")


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value * 1e3:.0f}"


def _stopped(m: dict[str, Any]) -> str:
    """``, 3 replica stops (12 requests lost)`` when the core stopped replicas, else ''."""
    stops = m.get("replica_stops") or 0
    if not stops:
        return ""
    return (f", {count_of(stops, 'replica stop')} ({count_of(m.get('lost') or 0, 'request')} "
            f"lost)")


def _name_only_what_was_given(config_yaml: Path, trace_given: bool, cluster_given: bool
                              ) -> None:
    """The run's ``config.yaml`` without the trace and cluster the command was not given: as
    written (``trace: philly-sample``, ``cluster: philly``, the defaults), ``simulate --config``
    added 2,000 training jobs to a services-only run, and put services run on their own nodes
    onto philly's P100s ("cluster philly has no A100-80G GPUs")."""
    import yaml

    data = yaml.safe_load(config_yaml.read_text())
    for key, given in (("trace", trace_given), ("cluster", cluster_given)):
        if not given:
            data.pop(key, None)
    config_yaml.write_text(yaml.safe_dump(data, sort_keys=False))


def _print_training(outcome: RunOutcome, out: Path, prefix: str = "") -> None:
    """The training jobs' line, as ``simulate`` prints it without services (the core's
    summary.json counts the replicas as jobs too: 2013 jobs for philly-sample's 2000)."""
    jobs = [j for j in outcome.result.jobs if not j.job_id.startswith(SERVICE_PREFIX)]
    if not jobs:
        return
    jcts = [j.jct for j in jobs if j.status == "finished" and j.jct is not None]
    mean = duration_text(sum(jcts) / len(jcts)) if jcts else "-"
    console.print(escape(f"{prefix}training jobs: {len(jcts)}/{len(jobs)} finished, mean JCT "
                         f"{mean} -> {out / 'jobs.csv'}"))


def _print(report: dict[str, Any], out: Path, prefix: str = "") -> None:
    for name, m in report["services"].items():
        latency = "-" if m["latency_p99"] is None else f"{m['latency_p99']:.1f} s"
        if "replicas_placed_late" in m:  # autoscaled: replicas came and went
            placed = (f"{count_of(m['replicas'], 'replica')} over the run (autoscaled from "
                      f"{m['replicas_requested']}, peak {m.get('replicas_peak', m['replicas'])}, "
                      f"{m['replicas_placed_late']} placed late)")
        else:
            placed = f"{m['replicas']}/{m['replicas_requested']} replicas placed"
        if m.get("kind") == "dnn":  # one answer per request: no first token, no TPOT
            times = f"latency p50/p99 {_ms(m['latency_p50'])}/{_ms(m['latency_p99'])} ms"
        else:
            times = (f"TTFT p50/p99 {_ms(m['ttft_p50'])}/{_ms(m['ttft_p99'])} ms, TPOT "
                     f"p50/p99 {_ms(m['tpot_p50'])}/{_ms(m['tpot_p99'])} ms, latency p99 "
                     f"{latency}")
        # a trace of one instant (one request) has no rate: goodput is None
        goodput = "-" if m["goodput_rps"] is None else f"{m['goodput_rps']:.2f}"
        console.print(escape(
            f"{prefix}{name}: {placed}, {count_of(m['requests'], 'request')}, SLO ({m['slo']}) "
            f"met by {(m['slo_attainment'] or 0) * 100:.2f}%, {times}, goodput {goodput} "
            f"req/s, {m['gpu_hours']:.1f} GPU-h" + _stopped(m)))
    console.print(escape(f"{prefix}cluster {report['cluster']}, policy {report['policy']}, "
                         f"{report['wall_seconds']:.2f} s wall, {report['cpu_seconds']:.2f} s "
                         f"CPU -> {out / 'services.json'}"))


@replicas_app.command("replicas")
def replicas_command(
        services_file: Annotated[Path, typer.Argument(help="A services YAML file.")],
        target: Annotated[float, typer.Option(
            "--target", min=0.0, max=1.0, help="SLO attainment to reach.")] = 0.99,
        service: Annotated[str | None, typer.Option(
            "--service", help="Only this service (default: each in the file).")] = None,
        most: Annotated[int, typer.Option("--max", min=1, help="Give up above N.")] = 256,
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False) -> None:
    """The fewest replicas of each service (all up from the start) whose SLO attainment on
    its request trace reaches --target."""
    from dlsched.serving.run import infeasible_slo, replicas_for_slo, service_trace
    from dlsched.serving.services_file import load_services
    from dlsched.wording import did_you_mean

    try:
        services = load_services(services_file)
        chosen = [(i, s) for i, s in enumerate(services.services)
                  if service is None or s.name == service]
        if not chosen:
            assert service is not None
            names = [s.name for s in services.services]
            raise DlschedError(f"{services_file}: no service named {service!r} (its services: "
                               f"{', '.join(names)}){did_you_mean(service, names)}")
        answers = {}
        for index, spec in chosen:
            trace = service_trace(spec)
            problem = infeasible_slo(spec, trace)
            if problem is not None:
                raise services.error(index, f"slo.{problem[0]}", problem[1])
            needed, tried = replicas_for_slo(spec, trace, target, most)
            answers[spec.name] = {"replicas": needed, "target": target,
                                  "tried": [{"replicas": n, "slo_attainment": a}
                                            for n, a in tried]}
            if spec.prefill is not None:  # the decode pool is searched; the prefill pool kept
                answers[spec.name]["prefill_replicas"] = spec.prefill.replicas
    except DlschedError as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(answers, indent=2, sort_keys=True))
        return
    for name, a in answers.items():
        tried_text = ", ".join(f"{t['replicas']}: {t['slo_attainment'] * 100:.2f}%"
                               for t in a["tried"])
        kind = "replica" if "prefill_replicas" not in a else "decode replica"
        verdict = (count_of(a["replicas"], kind) if a["replicas"] is not None
                   else f"more than {count_of(most, kind)}")
        if "prefill_replicas" in a:
            verdict += f" (beside its {count_of(a['prefill_replicas'], 'prefill replica')})"
        verb = "reaches" if a["replicas"] == 1 else "reach"
        print(f"{name}: {verdict} {verb} {target * 100:g}% SLO attainment (tried {tried_text})")


def register(app: typer.Typer) -> None:
    """Add ``replicas`` to the main ``dlsched`` app (its body imports the simulator lazily)."""
    app.registered_commands.extend(replicas_app.registered_commands)
    from dlsched.serving.real.cli import register as register_inference

    register_inference(app)
