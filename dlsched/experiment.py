"""Executing a run described by a ``RunConfig`` (``run_config.py``): load its trace, build each
policy's profile, simulate and write the outputs."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.cluster.cluster import Cluster
from dlsched.errors import ConfigError, DlschedError, mark_policy_file_bug
from dlsched.gcpause import gc_paused
from dlsched.perf.model import WORK_UNITS, get_throughput_model
from dlsched.report.aside import aside
from dlsched.report.fairness import FairnessInputs, isolated_seconds
from dlsched.report.html import write_report
from dlsched.report.metrics import Summary
from dlsched.report.output import (
    check_format,
    run_identity,
    write_json,
    write_run,
    write_timeline,
)
from dlsched.report.tenant_output import spec_index, write_audit
from dlsched.run_config import RunConfig, parse_policy_options
from dlsched.scheduling.cycle import ordered_waiting
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import accepts, build_policy, load_policy_files
from dlsched.scheduling.state import CycleState
from dlsched.sim.progress import ProgressCallback
from dlsched.sim.result import SimulationResult
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace, resolve_traces
from dlsched.workload.gpu_pins import unknown_pins, with_cluster_spelling
from dlsched.workload.job import JobKind, JobStatus, WorkUnit
from dlsched.workload.readers.base import ReaderOptions
from dlsched.workload.readers.philly import without_vc_pins
from dlsched.workload.readers.pollux_work import progress_seconds
from dlsched.workload.synthetic import generate
from dlsched.workload.trace import Trace

if TYPE_CHECKING:
    from dlsched.tenancy.config import TenantConfig
    from dlsched.tenancy.plugins import TenantAdmission

SYNTHETIC = "synthetic"


def options_for(policy: str, options: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """Options for one policy: ``policy:key=value`` targets it; a plain ``key=value`` goes to
    every policy that has such an option (and must fit at least one, checked by the caller)."""
    chosen: dict[str, str] = {}
    for key, value in options:
        target, sep, name = key.rpartition(":")
        if sep and target == policy:
            chosen[name] = value
        elif not sep and accepts(policy, key):
            chosen[key] = value
    return chosen


__all__ = ["RunConfig", "parse_policy_options"]  # re-exported: their home is run_config.py


def check_options(policies: tuple[str, ...], options: tuple[tuple[str, str], ...],
                  flag: str = "--policy-opt") -> None:
    """Each option targets a policy being run (``policy:key``) or one some policy has;
    ``flag``: how the messages name the option (``policy_options`` from Python)."""
    for key, _ in options:
        target, sep, name = key.rpartition(":")
        if sep and target not in policies:
            raise ConfigError(f"{flag} {key}: policy {target!r} is not being run")
        if not sep and not any(accepts(p, key) for p in policies):
            raise ConfigError(_no_policy_has(key, policies, flag))


def _no_policy_has(key: str, policies: tuple[str, ...], flag: str) -> str:
    """A plain ``--policy-opt KEY`` none of the run's policies has: the closest name, and the
    options they do have (a typo read only "no policy of tiresias has it")."""
    from difflib import get_close_matches

    from dlsched.scheduling.registry import option_names

    names = list(dict.fromkeys(o for p in policies for o in option_names(p)))
    close = get_close_matches(key, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (f"{flag} {key}: no policy of {', '.join(policies)} has it{hint}; "
            f"their options: {', '.join(names) or 'none'}")


def refuse_services(config: RunConfig) -> None:
    """A services file where it would not be run (a sweep, the notebook): an error, not a
    run of the training jobs alone (``simulate`` and ``compare`` run services on their own
    path, ``serving/cli.py``)."""
    if config.services is not None:
        raise ConfigError(f"--services {config.services}: only `dlsched simulate` and "
                          "`dlsched compare` run inference services; run them there")


# the CLI's flags of the fields ``check_run`` names in its messages
_CHECKED_FLAGS = {"policies": "--policies", "policy_options": "--policy-opt",
                  "throughput": "--throughput"}


def check_run(config: RunConfig, where: Callable[[str], str] | None = None) -> None:
    """Every policy name, policy option, placement, tenant file and output format of the run
    checked before its first simulation: a typo in the last policy of a comparison fails at
    once, not after the others ran. (The trace and cluster are loaded before it too.)
    ``where``: how the messages name a field (default its CLI flag; the notebook passes the
    keyword, which is what its user typed)."""
    from dlsched.extras import MissingExtra, require

    if config.policy_files:  # their policies' options are known only once they are loaded
        load_policy_files(config.policy_files)
    twice = sorted({p for p in config.policies if config.policies.count(p) > 1})
    named = where or _CHECKED_FLAGS.__getitem__
    if twice:  # each would write DIR/POLICY and a report row over the other's
        raise ConfigError(f"{named('policies')}: {', '.join(twice)} listed twice")
    check_options(config.policies, config.policy_options, named("policy_options"))
    for policy in config.policies:
        build_profile(config, policy)  # unknown names and bad option values raise here
    if config.throughput is not None:
        known_model(config.throughput, named("throughput"))
    if config.jobs_format == "parquet":
        try:
            require("parquet", "--jobs-format parquet")
        except MissingExtra as exc:
            raise MissingExtra(f"{exc} (or --jobs-format csv)") from None


def check_out(out: Path, name: str = "--out") -> Path | None:
    """The output folder can be made and written (a run of minutes must not end in an error
    that was there from the start). Returns the outermost folder this made (None: ``out``
    was there), for ``unmake_out`` when a later check stops the run before it writes.
    ``name``: the option the messages name (``out=`` from Python)."""
    made = None
    for folder in (out, *out.parents):
        if folder.exists():
            break
        made = folder
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{name} {out}: cannot create the folder: {exc.strerror or exc}"
                          ) from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise ConfigError(f"{name} {out}: the folder is not writable")
    return made


@contextlib.contextmanager
def out_checked(out: Path, name: str = "--out") -> Iterator[None]:
    """``check_out`` before the inputs are read and checked in the block; if the block raises
    (a bad trace, services file or option: nothing ran), the folders it made go again."""
    made = check_out(out, name)
    try:
        yield
    except BaseException:
        unmake_out(out, made)
        raise


def unmake_out(out: Path, made: Path | None) -> None:
    """Remove the empty folders ``check_out`` made for ``out`` (up to ``made``): a run that
    stops at a bad trace or option leaves no empty output folder behind."""
    if made is None:
        return
    for folder in (out, *out.parents):
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            return
        if folder == made:
            return


def load_trace(config: RunConfig, cluster: Cluster) -> Trace:
    """The run's trace. With tenants, the Philly reader's per-VC pool pin is dropped (a job
    whose pool is its own queue runs anywhere its queue's flavors allow): the tenant quota
    bounds each VC instead, so that it can borrow; and every job's queue must be known."""
    options = ReaderOptions.for_cluster(cluster, skip_invalid=config.skip_invalid,
                                        limit=config.limit, rebase=not config.keep_trace_clock,
                                        sacct_queue=config.sacct_queue,
                                        sacct_resources=config.sacct_resources)
    if config.trace == SYNTHETIC:
        source = resolve_trace(config.synthetic_from, None, options)
        trace = generate(config.synthetic_jobs, config.synthetic_rate, config.seed, source)
    else:
        trace = resolve_traces(config.trace, config.format, options)
    trace = with_cluster_spelling(trace, cluster)  # gres/gpu:a100 means the cluster's A100
    if config.throughput is not None:
        _check_work_unit(trace, known_model(config.throughput))
        trace = replace(trace, throughput=config.throughput)
    if config.work_definition == "progress":
        trace = with_progress_work(trace)
    if config.single_queue:
        trace = in_one_queue(trace)
    if config.tenants is None:
        return trace
    from dlsched.tenancy.loader import load_tenants  # the tenant layer only when asked for

    check_queues(trace, load_tenants(config.tenants))
    return without_vc_pins(trace)


def with_progress_work(trace: Trace) -> Trace:
    """A Pollux-format trace with each job's work as the Pollux artifact defines it
    (``pollux_work.progress_seconds``); a ConfigError for any other format."""
    if trace.format != "pollux":
        raise ConfigError(f"work_definition progress is for pollux-format traces; trace "
                          f"{trace.name} is {trace.format}")
    jobs = tuple(replace(spec, work=progress_seconds(str(spec.model), int(spec.batch_size or 0),
                                                     spec.num_gpus))
                 for spec in trace.jobs)
    return replace(trace, jobs=jobs)


def in_one_queue(trace: Trace) -> Trace:
    """Every job in the queue ``default``, without the pool pin a reader derives from its
    queue (Philly's VCs): the Tiresias and Gavel artifacts schedule one global queue."""
    jobs = tuple(replace(spec, queue="default",
                         pool=None if spec.pool == spec.queue else spec.pool)
                 for spec in trace.jobs)
    return replace(trace, jobs=jobs)


def _check_work_unit(trace: Trace, model: str) -> None:
    """A ConfigError where ``model`` counts work in another unit than the trace's jobs (a
    Gavel trace's steps under ``linear`` ran as seconds: 925,982 steps, 10.7 days)."""
    unit = WORK_UNITS.get(model)
    other = next((s for s in trace.jobs if s.work_unit is not unit), None) if unit else None
    if other is not None:
        def words(u: WorkUnit) -> str:
            return u.value.replace("_", " ")
        raise ConfigError(
            f"--throughput {model} counts work in {words(unit)}, but trace {trace.name}'s job "
            f"{other.job_id} counts it in {words(other.work_unit)} (its model: "
            f"{trace.throughput}): give a model of the same unit (docs/throughput-models.md)")


def known_model(name: str, flag: str = "--throughput") -> str:
    try:
        get_throughput_model(name)
    except KeyError as exc:
        raise ConfigError(f"{flag}: {exc.args[0]}") from None
    return name


FAILURE_ONLY = ("checkpoint_interval", "checkpoint_seconds", "hot_spares", "resilience")


def input_warnings(config: RunConfig, trace: Trace, cluster: Cluster) -> list[str]:
    """What in the run's inputs loads but leaves jobs unable to ever run: GPU types the trace
    pins that no node has, tenant flavors that no node belongs to; and options that would do
    nothing: those that shape the response to node failures without ``--failures``, a
    policy's ``strict`` under ``--tenants``."""
    found = unknown_pins(trace, cluster, config.cluster)
    if any(spec.mig_profile is not None for spec in trace.jobs):
        from dlsched.mig.offered import unoffered_profiles

        found += unoffered_profiles(trace, cluster.type_names, config.cluster)
    if config.tenants is not None:
        from dlsched.tenancy.assignment import empty_flavors
        from dlsched.tenancy.loader import load_tenants

        tenants = load_tenants(config.tenants)
        found += empty_flavors(tenants, cluster, config.cluster)
        found += _idle_strict_option(config, tenants)
    return (found + _uncapped_placement(config, trace) + _mig_by_allocation(config, trace)
            + _idle_failure_options(config) + _llm_checkpoint_cost(config, trace)
            + _restart_warnings(config, trace, cluster))


def _restart_warnings(config: RunConfig, trace: Trace, cluster: Cluster) -> list[str]:
    """Policies whose options can preempt a job before its ``--restart-overhead`` passes,
    told by their plugins' ``restart_warning`` (Tiresias' promotion, for the trace's largest
    gang that fits the cluster: it took turns for ever without a word, session 31)."""
    largest = max((spec.num_gpus for spec in trace.jobs if spec.num_gpus <= cluster.num_gpus),
                  default=0)
    if not config.restart_overhead or not largest:
        return []
    found = []
    own = replace(config, tenants=None)  # the policy's plugins (the tenant layer wraps them)
    for policy in config.policies:
        profile = _quietly_built(own, policy)
        for plugin in {id(p): p for p in (profile.queue_sort, *profile.plugins)}.values():
            warning = getattr(plugin, "restart_warning", None)
            text = warning(config.restart_overhead, largest) if callable(warning) else None
            if text:
                found.append(f"{policy}: {text}")
    return found


def _quietly_built(config: RunConfig, policy: str) -> Profile:
    """``build_profile``, its own data warnings left for when it runs (they come then)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build_profile(config, policy)


def _idle_strict_option(config: RunConfig, tenants: TenantConfig) -> list[str]:
    """A policy's ``strict`` (fifo's: a head that does not fit blocks the jobs behind it) given
    with ``--tenants``: the tenant layer sets the policy's own blocking aside, and each
    cluster queue's ``queueing_strategy`` decides instead (Kueue's StrictFIFO or
    BestEffortFIFO, the default), so the option did nothing without a word."""
    given = [policy for policy in config.policies
             if "strict" in options_for(policy, config.policy_options)]
    if not given:
        return []
    counts: dict[str, int] = {}
    for cq in tenants.cluster_queues.values():
        counts[cq.queueing_strategy.value] = counts.get(cq.queueing_strategy.value, 0) + 1
    strategies = ", ".join(f"{name} for {count} of them" for name, count in counts.items())
    return [f"{', '.join(given)}: --policy-opt strict has no effect under --tenants: each "
            f"cluster queue's queueing_strategy decides whether a head that cannot start "
            f"blocks the jobs behind it ({config.tenants}: {strategies}; docs/tenancy.md)"]


def _uncapped_placement(config: RunConfig, trace: Trace) -> list[str]:
    """Policies that place jobs by their own allocation (Gavel, Pollux, Gandiva, ...): they do
    not choose nodes by ``max_per_node``; a layout that breaks a cap is spread over nodes of
    the GPU types they chose (``allocation_cycle._spread``), and a job no spread fits waits."""
    capped = sum(1 for spec in trace.jobs if spec.max_per_node)
    if not capped:
        return []
    return [f"{policy} places jobs by its own allocation, not by max_per_node: a layout that "
            f"breaks the cap of one of the {capped} capped jobs is spread over nodes of the GPU "
            f"types it chose, and a job no spread fits waits, maybe for ever (docs/sharing.md)"
            for policy in _allocating(config)]


def _mig_by_allocation(config: RunConfig, trace: Trace) -> list[str]:
    """MIG jobs under a policy that allocates (Gavel, Pollux, Gandiva, ...): it gives each
    worker a GPU of its own and never chooses instances (docs/mig.md, "What is not done"),
    so four 1g jobs on two A100s ran two at a time, not four at once as under fifo."""
    mig = sum(1 for spec in trace.jobs if spec.mig_profile is not None)
    if not mig:
        return []
    return [f"{policy} places jobs by its own allocation and does not choose MIG instances: "
            f"each of the {mig} MIG jobs runs alone on its GPU (a policy that places, such as "
            f"fifo or tiresias, packs instances; docs/mig.md)" for policy in _allocating(config)]


def _allocating(config: RunConfig) -> list[str]:
    """The run's policies that place jobs by their own allocation, not through the
    framework's ``place`` (an ``AllocatePlugin``)."""
    return [policy for policy in config.policies
            if _quietly_built(config, policy).allocators]


def _idle_failure_options(config: RunConfig) -> list[str]:
    if config.failures is not None:
        return []
    from dlsched.cli_options import flags

    defaults = RunConfig()
    given = [flags()[key] for key in FAILURE_ONLY
             if getattr(config, key) != getattr(defaults, key)]
    if not given:
        return []
    return [f"{', '.join(given)} {'has' if len(given) == 1 else 'have'} no effect without "
            f"--failures (they shape the response to node failures; docs/llm.md)"]


def _llm_checkpoint_cost(config: RunConfig, trace: Trace) -> list[str]:
    """``--checkpoint-cost`` given for a trace of LLM jobs only: each such job's checkpoint
    costs its size over the storage bandwidth (``ResilienceBook.checkpoint_delta``), so the
    flag changed nothing, without a word."""
    from dlsched.perf.llm.models import BUILTIN_MODELS
    from dlsched.sim.checkpoint import CheckpointPlan

    if (config.failures is None or config.checkpoint_seconds == RunConfig().checkpoint_seconds
            or not trace.jobs or any(spec.model not in BUILTIN_MODELS for spec in trace.jobs)):
        return []
    return ["--checkpoint-cost has no effect on this trace: every job is an LLM job, whose "
            "checkpoint stalls it for its size (14 bytes a parameter) over the storage "
            f"bandwidth ({CheckpointPlan().storage_gbps:g} GB/s; docs/llm.md)"]


def check_queues(trace: Trace, tenants: TenantConfig) -> None:
    """A ConfigError naming the tenant file and the first queue of the trace it does not
    know (a job of an unknown queue could never be admitted)."""
    unknown: dict[str, int] = {}
    for spec in trace.jobs:
        if tenants.cluster_queue_of(spec.queue) is None:
            unknown[spec.queue] = unknown.get(spec.queue, 0) + 1
    if unknown:
        name, count = next(iter(unknown.items()))
        more = len(unknown) - 1
        raise ConfigError(f"{tenants.source}: trace {trace.name}'s jobs use queue {name!r} "
                          f"({count} job{'s' if count > 1 else ''}), which is no local or "
                          "cluster queue of it"
                          + (f" ({more} more unknown queue{'s' if more > 1 else ''})"
                             if more else ""))


def build_profile(config: RunConfig, policy: str) -> Profile:
    """The policy's profile, inside the tenant model when ``config.tenants`` names a file.
    The run's policy files are imported first (once per process: every worker of a comparison
    or sweep builds its profiles here)."""
    if config.policy_files:
        load_policy_files(config.policy_files)
    profile = build_policy(policy, options_for(policy, config.policy_options), config.placement)
    if config.tenants is None:
        return profile
    from dlsched.tenancy.loader import load_tenants
    from dlsched.tenancy.profile import with_tenants

    return with_tenants(profile, load_tenants(config.tenants))


def tenant_admission(plugin: Any) -> TenantAdmission | None:
    """``plugin`` when it is the tenant layer's QueueSort (a run with ``--tenants``), else
    None; without tenants the tenant layer is never imported."""
    plugins = sys.modules.get("dlsched.tenancy.plugins")
    if plugins is None or not isinstance(plugin, plugins.TenantAdmission):
        return None
    return plugin


def final_positions(profile: Profile, sim: Simulator) -> dict[str, int]:
    """Each job still waiting when the run ends: its 1-based place in its queue (the tenant
    layer's position in its cluster queue; otherwise the policy's order within the queue)."""
    waiting = [j for j in sim.core.jobs.values() if j.status.is_waiting]
    if not waiting:
        return {}
    plugin = tenant_admission(profile.queue_sort)
    if plugin is not None:
        return {j.job_id: plugin.pending[j.job_id].position + 1 for j in waiting
                if j.job_id in plugin.pending}
    state = CycleState.begin(sim.core.snapshot())
    places: dict[str, int] = {}
    out: dict[str, int] = {}
    for job in ordered_waiting(profile, state):
        places[job.spec.queue] = places.get(job.spec.queue, 0) + 1
        out[job.job_id] = places[job.spec.queue]
    return out


@dataclass
class RunOutcome:
    result: SimulationResult
    summary: Summary
    out_dir: Path
    fairness: FairnessInputs | None = None
    throughput: str = ""  # the throughput model that rated the jobs
    never_admitted: list[tuple[str, str, str]] = field(default_factory=list)
    # Training jobs not finished when the run ran out of events (not a stall: ``stalled_at``)
    left_unfinished: tuple[str, ...] = ()


def unfinished_training(result: SimulationResult, trace: Trace) -> tuple[str, ...]:
    """Training jobs still running or waiting at the end of a run that ran out of events: a
    finite job left so never progresses (placed where its rate is 0, say). Services run until
    their end on purpose and a stalled run is told apart (``stalled_at``): neither is listed."""
    if result.stalled_at is not None:
        return ()
    services = {s.job_id for s in trace.jobs if s.kind is JobKind.SERVICE}
    return tuple(r.job_id for r in result.jobs
                 if r.finish_time is None and r.status in _LEFT and r.job_id not in services)


_LEFT = frozenset(s.value for s in (JobStatus.RUNNING, JobStatus.PENDING, JobStatus.PREEMPTED))


def run_policy(config: RunConfig, policy: str, trace: Trace, cluster: Cluster, out_dir: Path,
               progress: ProgressCallback | None = None,
               simulated: Callable[[], None] | None = None) -> RunOutcome:
    """Simulate one policy and write its files into ``out_dir``. ``simulated`` is called once
    the simulation ends, before the files are written (the CLI closes its progress bar there:
    with no other thread left, the segments are written on a forked process while this one
    writes the rest, ``report/aside.py``)."""
    profile = build_profile(config, policy)
    sim_config = SimConfig(restart_overhead=config.restart_overhead,
                           round_seconds=config.round_seconds, seed=config.seed,
                           start_overhead=config.start_overhead,
                           rounds_only=config.rounds_only, keep_finished=False,
                           mig_placement=config.mig_placement, **failure_options(config))
    with gc_paused():  # the simulation and its reports (gcpause.py)
        started = time.perf_counter()
        sim = Simulator(cluster, trace, profile, sim_config, progress=progress)
        result = _simulated(sim, config, policy)
        result = replace(result, wall_seconds=time.perf_counter() - started)
        if simulated is not None:
            simulated()
        summary, fairness, never = _write_files(config, sim, result, trace, cluster, out_dir)
    # out: this run's folder. A compare's DIR/POLICY/config.yaml said `out: DIR`, so
    # `simulate --config` on it wrote over the comparison's own summary.json; a sweep's said
    # `out: runs/latest`, the default
    own = replace(config, policies=(policy,), out=str(out_dir))
    (out_dir / "config.yaml").write_text(own.with_absolute_paths().to_yaml())
    _record_options(out_dir / "run.json", own, trace)
    return RunOutcome(result, summary, out_dir, fairness, trace.throughput, never,
                      unfinished_training(result, trace))


def _simulated(sim: Simulator, config: RunConfig, policy: str) -> SimulationResult:
    """``sim.run()``; an error raised by a ``--policy-file``'s own code is marked with the
    policy, and the job and time it was handling (``errors.mark_policy_file_bug``), here where
    the traceback still holds them: the CLI's line names them (``errors.policy_file_bug``),
    from a worker process too, and a notebook's traceback ends with them."""
    try:
        return sim.run()
    except DlschedError:
        raise
    except Exception as exc:
        if config.policy_files:
            mark_policy_file_bug(exc, config.policy_files, policy)
        raise


ASIDE_MIN_JOBS = 10_000  # runs with fewer jobs write every file on this process


def _write_files(config: RunConfig, sim: Simulator, result: SimulationResult, trace: Trace,
                 cluster: Cluster, out_dir: Path
                 ) -> tuple[Summary, FairnessInputs, list[tuple[str, str, str]]]:
    """The run's files: timeline.csv and segments.csv (with tenants, the audit files too) on a
    forked process where it may (``report/aside.py``), the jobs table and the summary here
    meanwhile; the same files either way. Returns the summary, the fairness inputs and the
    jobs that can never be admitted."""
    admission = tenant_admission(sim.profile.queue_sort)
    check_format(config.jobs_format)  # before any file is written, here or aside
    Path(out_dir).mkdir(parents=True, exist_ok=True)  # before the child writes there

    def timeline_and_audit() -> list[tuple[str, str, str]]:
        identity = run_identity(result.info)
        write_timeline(result, out_dir, identity)
        return write_audit(sim.core, admission, out_dir, identity, spec_index(trace.jobs))

    # None: written below, on this process (also for a small run, whose files take less
    # time than a fork and its page copies: ``ASIDE_MIN_JOBS``)
    writing = aside(timeline_and_audit) if len(trace) >= ASIDE_MIN_JOBS else None
    try:
        fairness = FairnessInputs.of_run(result, isolated_seconds(trace, sim.core.throughput),
                                         cluster)
        summary = write_run(result, out_dir, config.jobs_format, fairness=fairness,
                            positions=final_positions(sim.profile, sim), timeline=False)
    except BaseException:
        if writing is not None:  # reap the child; this failure is the one to tell
            with contextlib.suppress(BaseException):
                writing.result()
        raise
    never = writing.result() if writing is not None else timeline_and_audit()
    return summary, fairness, never


def failure_options(config: RunConfig) -> dict[str, object]:
    """The simulator's failure model, checkpoint plan and spares for a run (none: none)."""
    from dlsched.sim.checkpoint import CheckpointPlan, parse_interval
    from dlsched.sim.failures import resolve_failure_model

    if config.failures is None:
        return {}
    return {"failures": resolve_failure_model(config.failures),
            "checkpoint": CheckpointPlan(parse_interval(config.checkpoint_interval),
                                         config.checkpoint_seconds),
            "hot_spares": config.hot_spares, "resilience": config.resilience}


def _record_options(path: Path, config: RunConfig, trace: Trace) -> None:
    """run.json also names the throughput model that rated the jobs and every option of the
    run that is not its default (issue 11 item 12)."""
    import json

    run = json.loads(path.read_text())
    run["throughput"] = trace.throughput
    run["options"] = config.non_defaults()
    write_json(path, run)


def write_comparison(outcomes: list[RunOutcome], out_dir: Path, title: str,
                     config: RunConfig | None = None) -> Path:
    """A comparison's own files in ``out_dir``: ``summary.json`` (each run's summary by its
    policy label) and ``report.html``, whose path it returns. One place for the command, its
    ``--services`` form and ``dlsched.compare(out=...)``, which wrote no summary.json."""
    import json

    (out_dir / "summary.json").write_text(json.dumps(
        {o.summary.policy: o.summary.to_dict() for o in outcomes}, indent=2,
        sort_keys=True) + "\n")
    path = out_dir / "report.html"
    write_report([o.result for o in outcomes], path, title, [o.fairness for o in outcomes],
                 report_settings(outcomes, config), [o.summary for o in outcomes])
    return path


def report_settings(outcomes: list[RunOutcome], config: RunConfig | None) -> dict[str, str]:
    """The report header's settings: the throughput model and every non-default option (but
    trace, cluster and policies, which the header and the table already name)."""
    settings = {"throughput model": ", ".join(dict.fromkeys(o.throughput for o in outcomes))}
    if config is not None:
        shown = {k: v for k, v in config.non_defaults().items()
                 if k not in ("trace", "cluster", "policies")}
        settings["options"] = "; ".join(f"{k}={_option_text(v)}" for k, v in shown.items()) \
            or "all defaults"
    return settings


def _option_text(value: object) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)
