"""A run described as data: what the CLI flags or a YAML file say, and how to execute it.

``RunConfig`` maps one-to-one onto ``dlsched simulate`` options, so the same run can be given as
flags or as a file (``--config run.yaml``); every run writes its full config to
``DIR/config.yaml``, which ``--config`` reads back to repeat it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from dlsched.cluster.cluster import Cluster
from dlsched.errors import ConfigError
from dlsched.perf.model import get_throughput_model
from dlsched.report.fairness import FairnessInputs, isolated_seconds
from dlsched.report.html import write_report
from dlsched.report.metrics import Summary, summarize
from dlsched.report.output import FORMATS, write_run
from dlsched.scheduling.cycle import ordered_waiting
from dlsched.scheduling.profile import PLACEMENTS, Profile
from dlsched.scheduling.registry import accepts, build_policy
from dlsched.scheduling.state import CycleState
from dlsched.sim.result import SimulationResult
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.config import TenantConfig
from dlsched.tenancy.loader import load_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.bundled import resolve_trace, resolve_traces
from dlsched.workload.readers.base import ReaderOptions
from dlsched.workload.readers.philly import without_vc_pins
from dlsched.workload.synthetic import generate
from dlsched.workload.trace import Trace

SYNTHETIC = "synthetic"


@dataclass(frozen=True)
class RunConfig:
    trace: str = field(default="philly-sample", metadata={"help": "bundled trace name or path"})
    cluster: str = field(default="philly", metadata={"help": "built-in cluster or YAML path"})
    policies: tuple[str, ...] = field(default=("fifo",), metadata={"help": "policy names"})
    out: str = field(default="runs/latest", metadata={"help": "output directory"})
    seed: int = field(default=0, metadata={"help": "seed for synthetic traces"})
    format: str | None = field(default=None, metadata={"help": "trace format (detected)"})
    skip_invalid: bool = field(default=False, metadata={"help": "skip bad rows, counted"})
    limit: int | None = field(default=None, metadata={"help": "read at most N jobs"})
    placement: str | None = field(default=None, metadata={"help": "placement strategy"})
    policy_options: tuple[tuple[str, str], ...] = field(default=(), metadata={"help": "k=v"})
    restart_overhead: float = field(default=30.0, metadata={"help": "seconds lost per resume"})
    round_seconds: float | None = field(default=None, metadata={"help": "scheduling round"})
    jobs_format: str = field(default="csv", metadata={"help": "csv or parquet"})
    synthetic_jobs: int = field(default=1000, metadata={"help": "jobs of a synthetic trace"})
    synthetic_rate: float = field(default=30.0, metadata={"help": "synthetic jobs per hour"})
    synthetic_from: str = field(default="philly-sample", metadata={"help": "trace to fit"})
    tenants: str | None = field(default=None, metadata={"help": "tenant (queues/quotas) YAML"})
    throughput: str | None = field(default=None, metadata={"help": "throughput model (default: "
                                                           "the trace format's)"})

    @classmethod
    def from_yaml(cls, path: Path, overrides: Mapping[str, Any]) -> RunConfig:
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: cannot read run file: {exc}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: a run file is a mapping of option: value")
        if "policy" in data:
            data["policies"] = data.pop("policy")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"{path}: unknown key {unknown[0]!r} "
                              f"(known: {', '.join(sorted(known))})")
        merged = {**data, **{k: v for k, v in overrides.items() if v is not None}}
        return cls().with_values(merged)

    def with_values(self, values: Mapping[str, Any]) -> RunConfig:
        values = dict(values)
        if isinstance(values.get("policies"), str):
            values["policies"] = tuple(p.strip() for p in values["policies"].split(",") if p)
        if isinstance(values.get("policy_options"), dict):
            values["policy_options"] = tuple((str(k), str(v))
                                             for k, v in values["policy_options"].items())
        for key in ("policies", "policy_options"):
            if key in values:
                values[key] = tuple(tuple(v) if isinstance(v, list) else v
                                    for v in values[key])
        return replace(self, **values).checked()

    def checked(self) -> RunConfig:
        """This config with every value of its declared type, or a ConfigError naming it."""
        for f in fields(self):
            value = getattr(self, f.name)
            expected = _SCALAR_TYPES.get(f.name)
            if expected is not None and value is not None and not _is_a(value, expected):
                raise ConfigError(f"{f.name}: expected {expected.__name__}, got {value!r}")
        if not self.policies:
            raise ConfigError("policies: name at least one policy")
        if self.jobs_format not in FORMATS:
            raise ConfigError(f"jobs_format: {self.jobs_format!r} is not one of {FORMATS}")
        if self.placement is not None and self.placement not in PLACEMENTS:
            raise ConfigError(f"placement: {self.placement!r} is not one of {PLACEMENTS}")
        return self

    def to_yaml(self) -> str:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["policies"] = list(self.policies)
        data["policy_options"] = dict(self.policy_options)
        return yaml.safe_dump(data, sort_keys=False)


_SCALAR_TYPES: dict[str, type] = {
    "trace": str, "cluster": str, "out": str, "seed": int, "format": str, "skip_invalid": bool,
    "limit": int, "placement": str, "restart_overhead": float, "round_seconds": float,
    "jobs_format": str, "synthetic_jobs": int, "synthetic_rate": float, "synthetic_from": str,
    "tenants": str,
}


def _is_a(value: object, expected: type) -> bool:
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, expected)


def parse_policy_options(pairs: list[str]) -> tuple[tuple[str, str], ...]:
    parsed = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--policy-opt expects key=value, got {pair!r}")
        parsed.append((key.strip(), value.strip()))
    return tuple(parsed)


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


def check_options(policies: tuple[str, ...], options: tuple[tuple[str, str], ...]) -> None:
    for key, _ in options:
        target, sep, name = key.rpartition(":")
        if sep and target not in policies:
            raise ConfigError(f"--policy-opt {key}: policy {target!r} is not being run")
        if not sep and not any(accepts(p, key) for p in policies):
            raise ConfigError(f"--policy-opt {key}: no policy of {', '.join(policies)} has it")


def load_trace(config: RunConfig, cluster: Cluster) -> Trace:
    """The run's trace. With tenants, the Philly reader's per-VC pool pin is dropped (a job
    whose pool is its own queue runs anywhere its queue's flavors allow): the tenant quota
    bounds each VC instead, so that it can borrow; and every job's queue must be known."""
    options = ReaderOptions(skip_invalid=config.skip_invalid, max_gpus=cluster.num_gpus,
                            limit=config.limit)
    if config.trace == SYNTHETIC:
        source = resolve_trace(config.synthetic_from, None, options)
        trace = generate(config.synthetic_jobs, config.synthetic_rate, config.seed, source)
    else:
        trace = resolve_traces(config.trace, config.format, options)
    if config.throughput is not None:
        trace = replace(trace, throughput=_known_model(config.throughput))
    if config.tenants is None:
        return trace
    check_queues(trace, load_tenants(config.tenants))
    return without_vc_pins(trace)


def _known_model(name: str) -> str:
    try:
        get_throughput_model(name)
    except KeyError as exc:
        raise ConfigError(f"--throughput: {exc.args[0]}") from None
    return name


def check_queues(trace: Trace, tenants: TenantConfig) -> None:
    """A ConfigError naming the tenant file and the first queue of the trace it does not
    know (a job of an unknown queue could never be admitted)."""
    unknown: dict[str, int] = {}
    for spec in trace.jobs:
        if tenants.cluster_queue_of(spec.queue) is None:
            unknown[spec.queue] = unknown.get(spec.queue, 0) + 1
    if unknown:
        name, count = next(iter(unknown.items()))
        raise ConfigError(f"{tenants.source}: trace {trace.name}'s jobs use queue {name!r} "
                          f"({count} jobs), which is no local or cluster queue of it"
                          + (f" ({len(unknown) - 1} more unknown queues)"
                             if len(unknown) > 1 else ""))


def build_profile(config: RunConfig, policy: str) -> Profile:
    """The policy's profile, inside the tenant model when ``config.tenants`` names a file."""
    profile = build_policy(policy, options_for(policy, config.policy_options), config.placement)
    if config.tenants is None:
        return profile
    return with_tenants(profile, load_tenants(config.tenants))


def final_positions(profile: Profile, sim: Simulator) -> dict[str, int]:
    """Each job still waiting when the run ends: its 1-based place in its queue (the tenant
    layer's position in its cluster queue; otherwise the policy's order within the queue)."""
    waiting = [j for j in sim.core.jobs.values() if j.status.is_waiting]
    if not waiting:
        return {}
    plugin = profile.queue_sort
    if isinstance(plugin, TenantAdmission):
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


def run_policy(config: RunConfig, policy: str, trace: Trace, cluster: Cluster, out_dir: Path,
               progress: Callable[[int, int], None] | None = None) -> RunOutcome:
    profile = build_profile(config, policy)
    sim_config = SimConfig(restart_overhead=config.restart_overhead,
                           round_seconds=config.round_seconds, seed=config.seed)
    started = time.perf_counter()
    sim = Simulator(cluster, trace, profile, sim_config, progress=progress)
    result = sim.run()
    result = replace(result, wall_seconds=time.perf_counter() - started)
    fairness = FairnessInputs.of_run(result, isolated_seconds(trace, sim.core.throughput),
                                     cluster)
    write_run(result, out_dir, config.jobs_format, fairness=fairness,
              positions=final_positions(profile, sim))
    (out_dir / "config.yaml").write_text(replace(config, policies=(policy,)).to_yaml())
    return RunOutcome(result, summarize(result, fairness), out_dir, fairness)


def write_comparison(outcomes: list[RunOutcome], out_dir: Path, title: str) -> Path:
    path = out_dir / "report.html"
    write_report([o.result for o in outcomes], path, title, [o.fairness for o in outcomes])
    return path
