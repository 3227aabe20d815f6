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
from dlsched.report.fairness import FairnessInputs, isolated_seconds
from dlsched.report.html import write_report
from dlsched.report.metrics import Summary, summarize
from dlsched.report.output import FORMATS, write_run
from dlsched.report.type_usage import TypeUsage
from dlsched.scheduling.profile import PLACEMENTS
from dlsched.scheduling.registry import accepts, build_policy
from dlsched.sim.result import SimulationResult
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.readers.base import ReaderOptions
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
    options = ReaderOptions(skip_invalid=config.skip_invalid, max_gpus=cluster.num_gpus,
                            limit=config.limit)
    if config.trace == SYNTHETIC:
        source = resolve_trace(config.synthetic_from, None, options)
        return generate(config.synthetic_jobs, config.synthetic_rate, config.seed, source)
    return resolve_trace(config.trace, config.format, options)


@dataclass
class RunOutcome:
    result: SimulationResult
    summary: Summary
    out_dir: Path
    fairness: FairnessInputs | None = None


def run_policy(config: RunConfig, policy: str, trace: Trace, cluster: Cluster, out_dir: Path,
               progress: Callable[[int, int], None] | None = None) -> RunOutcome:
    profile = build_policy(policy, options_for(policy, config.policy_options), config.placement)
    sim_config = SimConfig(restart_overhead=config.restart_overhead,
                           round_seconds=config.round_seconds, seed=config.seed)
    started = time.perf_counter()
    sim = Simulator(cluster, trace, profile, sim_config, progress=progress)
    usage = TypeUsage.attach(sim)
    result = sim.run()
    result = replace(result, wall_seconds=time.perf_counter() - started)
    usage.close(sim)
    fairness = usage.inputs(isolated_seconds(trace, sim.core.throughput))
    write_run(result, out_dir, config.jobs_format, fairness=fairness)
    (out_dir / "config.yaml").write_text(replace(config, policies=(policy,)).to_yaml())
    return RunOutcome(result, summarize(result, fairness), out_dir, fairness)


def write_comparison(outcomes: list[RunOutcome], out_dir: Path, title: str) -> Path:
    path = out_dir / "report.html"
    write_report([o.result for o in outcomes], path, title, [o.fairness for o in outcomes])
    return path
