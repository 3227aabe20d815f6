"""``RunConfig``: one run described as data, and the one place that says what its options are.

Each field's type is the option's type and its metadata the option's help (and, where the flag
is not ``--field-name``, its flag): ``dlsched simulate`` and ``compare`` derive their options
from these fields (``cli_options.py``), a run file (``--config run.yaml``) is checked against
the same types with ``file:line:key`` errors, and every run writes its full config to
``DIR/config.yaml``, which ``--config`` reads back to repeat it.
"""

from __future__ import annotations

import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from dlsched.errors import ConfigError, InputLocation
from dlsched.wording import did_you_mean

WORK_DEFINITIONS = ("steps", "progress")
MIG_PLACEMENTS = ("mig-aware", "first-fit")  # mig/placement.py's placers


def _opt(default: Any, help: str, **meta: Any) -> Any:
    return field(default=default, metadata={"help": help, **meta})


@dataclass(frozen=True)
class RunConfig:
    trace: str = _opt("philly-sample", "A bundled trace name (see `dlsched traces`), a trace "
                      "file, or 'synthetic'. A cluster's own history (what-if replay): "
                      "`dlsched history export --out FILE`, or a Slurm sacct or kubectl "
                      "export (docs/what-if.md).")
    cluster: str = _opt("philly", "A built-in cluster (see `dlsched clusters`) or a cluster "
                        "YAML file.")
    policies: tuple[str, ...] = _opt(("fifo",), "Comma-separated policy names, e.g. "
                                     "fifo,sjf,tiresias (see `dlsched policies`).")
    policy_files: tuple[str, ...] = _opt(
        (), "Python files (.py) or module names that define more policies with "
        "@register_policy (docs/scheduling.md); comma-separated or repeated.",
        flag="--policy-file")
    out: str = _opt("runs/latest", "Output directory (simulate: summary.json, jobs.csv, "
                    "timeline.csv, run.json, config.yaml; compare: one such folder per policy "
                    "plus report.html).")
    seed: int = _opt(0, "Seed (synthetic traces).", low=0, high=2**63 - 1)
    format: str | None = _opt(None, "Trace format when a path's columns do not tell (e.g. "
                              "philly, pollux).")
    sacct_queue: str = _opt("partition", "Which field of a Slurm sacct export (slurm-sacct "
                            "trace) is each job's queue: partition, account, qos or user "
                            "(docs/what-if.md).")
    sacct_resources: bool = _opt(False, "Replay each job of a Slurm sacct export with the "
                                 "CPUs and host memory Slurm gave it (AllocTRES cpu=, mem=), "
                                 "per GPU; they count on nodes that give CPUs and memory "
                                 "(docs/what-if.md).")
    skip_invalid: bool = _opt(False, "Skip malformed rows with a counted warning instead of "
                              "stopping at the first.", flag="--skip-invalid/--strict-input")
    limit: int | None = _opt(None, "Read at most N jobs.", low=1, high=10**9)
    placement: str | None = _opt(None, "consolidated | spread | best-fit | topology (default: "
                                 "the policy's).")
    policy_options: tuple[tuple[str, str], ...] = _opt(
        (), "Policy option key=value (or policy:key=value); repeatable.", flag="--policy-opt")
    restart_overhead: float = _opt(30.0, "Seconds of lost progress each time a preempted job "
                                   "resumes.", low=0, high=10**9)
    round_seconds: float | None = _opt(None, "Also run a scheduling cycle every N seconds.",
                                       low=1e-3, high=10**9)
    start_overhead: float = _opt(0.0, "Seconds of lost progress on a job's first start too "
                                 "(the Pollux artifact charges its 30 s restart cost there).",
                                 low=0, high=10**9)
    rounds_only: bool = _opt(False, "Decide only at multiples of --round-seconds (from t=0), "
                             "not on each arrival and completion, as the Pollux and Gavel "
                             "artifacts' simulators do.", flag="--rounds-only/--event-cycles")
    work_definition: str = _opt("steps", "A Pollux-format job's work: steps (the measured "
                                "steps to finish x step time) or progress (the Pollux "
                                "artifact's progress target, with statistical efficiency at "
                                "the batch size run).")
    single_queue: bool = _opt(False, "Put every job in one queue (no per-VC queues and pool "
                              "pins), as the Tiresias and Gavel artifacts do.",
                              flag="--single-queue/--trace-queues")
    keep_trace_clock: bool = _opt(False, "Keep the trace file's own submit times instead of "
                                  "moving the first to t=0 (so --rounds-only rounds fall where "
                                  "the Pollux artifact's do).",
                                  flag="--keep-trace-clock/--rebase-trace")
    jobs_format: str = _opt("csv", "csv or parquet (parquet needs dlsched[parquet]).")
    synthetic_jobs: int = _opt(1000, "Jobs in a synthetic trace (--trace synthetic).", low=1,
                               high=10**7)
    synthetic_rate: float = _opt(30.0, "Poisson arrival rate of a synthetic trace, jobs per "
                                 "hour.", low=1e-6, high=10**9)
    synthetic_from: str = _opt("philly-sample", "Trace whose jobs a synthetic trace resamples "
                               "(whole job specs).")
    tenants: str | None = _opt(None, "A tenant YAML file (flavors, cluster queues, cohorts, "
                               "local queues; see docs/tenancy.md): every policy runs inside "
                               "its quotas. Drops the Philly VC pool pins.")
    throughput: str | None = _opt(None, "Throughput model instead of the trace format's: "
                                  "linear, pollux, gavel, goodput (Pollux's goodput model, "
                                  "re-rated as training progresses), goodput-sia (with Sia's "
                                  "per-GPU-type fits); see docs/throughput-models.md.")
    failures: str | None = _opt(None, "Node failures from a failure model: llama3 (Llama 3 "
                                "405B's rates by category), llama3xK (K times those rates) "
                                "or a failure YAML file; see docs/llm.md.")
    checkpoint_interval: str = _opt("young", "Seconds of training between checkpoints, or a "
                                    "rule: young, daly, adaptive (from the failure rate).",
                                    flag="--checkpoint")
    checkpoint_seconds: float = _opt(60.0, "Seconds one checkpoint stalls a job (LLM jobs: "
                                     "their checkpoint size over the storage bandwidth).",
                                     flag="--checkpoint-cost")
    hot_spares: int = _opt(0, "Nodes held back as hot spares in each node pool: one of the "
                           "failed node's pool replaces it at once.")
    resilience: str = _opt("restart", "What a job hit by a node failure does without a spare: "
                           "restart (requeue at its size), elastic (continue on fewer "
                           "data-parallel replicas, grow back after repair) or oobleck "
                           "(re-plan pipelines on the surviving nodes); see docs/llm.md.")
    mig_placement: str = _opt("mig-aware", "Where MIG jobs' instances go: mig-aware (the "
                              "placement that keeps the most room for large profiles) or "
                              "first-fit (the lowest-index GPU where it fits); docs/mig.md.")
    services: str | None = _opt(None, "A services YAML file (model, GPU type, tensor-parallel "
                                "degree, replicas, SLO, request trace; see "
                                "docs/inference.md): simulates their requests, their replicas "
                                "placed by the policy beside the --trace jobs (only when "
                                "--trace is given); writes DIR/services.json.")

    @classmethod
    def from_yaml(cls, path: Path, overrides: Mapping[str, Any] | None = None,
                  where: Callable[[str], str] = str) -> RunConfig:
        """The run file ``path`` with ``overrides`` (flags: not None wins) on top. A bad value
        in the file is a ``file:line:key`` error; a bad override is named by ``where(key)``."""
        from dlsched.cluster.loader import unknown_key_message
        from dlsched.yamlinput import load_yaml_file

        data, src = load_yaml_file(path)
        data = {} if data is None else data
        if not isinstance(data, dict):
            raise src.error("", "a run file is a mapping of option: value")
        if "policy" in data:
            src = _renamed(src, "policy", "policies")
            data["policies"] = data.pop("policy")
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise src.error(str(key), unknown_key_message(key, known))
            try:
                values[key] = normalized(key, value)
            except ConfigError as exc:
                raise src.error(key, str(exc)) from None
        overrides = overrides or {}

        def located(key: str) -> str:
            if key in values and overrides.get(key) is None:
                return str(InputLocation(src.path, src.line(key), key))
            return where(key)

        return replace(cls(), **values).with_values(overrides, located)

    def with_values(self, values: Mapping[str, Any],
                    where: Callable[[str], str] = str) -> RunConfig:
        """This config with ``values`` (None: keep) checked and set; an error names a value by
        ``where(field name)`` (a flag, or a file's ``file:line:key``)."""
        changes: dict[str, Any] = {}
        for key, value in values.items():
            if value is None:
                continue
            try:
                changes[key] = normalized(key, value)
            except ConfigError as exc:
                raise ConfigError(f"{where(key)}: {exc}") from None
        return replace(self, **changes).checked(where)

    def checked(self, where: Callable[[str], str] = str) -> RunConfig:
        """This config if every value fits its field, or a ConfigError naming the first that
        does not."""
        from dlsched.report.output import FORMATS
        from dlsched.scheduling.profile import PLACEMENTS, SHARING_PLACEMENTS
        from dlsched.workload.readers.slurm import QUEUE_FIELDS

        for f in fields(self):
            try:
                check_type(f.name, getattr(self, f.name))
                check_range(f, getattr(self, f.name))
            except ConfigError as exc:
                raise ConfigError(f"{where(f.name)}: {exc}") from None
        if not self.policies:
            raise ConfigError(f"{where('policies')}: name at least one policy")
        self._check_failure_options(where)
        for key, value, allowed in (("jobs_format", self.jobs_format, FORMATS),
                                    ("placement", self.placement,
                                     (*PLACEMENTS, *SHARING_PLACEMENTS)),
                                    ("work_definition", self.work_definition,
                                     WORK_DEFINITIONS),
                                    ("mig_placement", self.mig_placement, MIG_PLACEMENTS),
                                    ("sacct_queue", self.sacct_queue, tuple(QUEUE_FIELDS))):
            if value is not None and value not in allowed:
                raise ConfigError(f"{where(key)}: {value!r} is not one of "
                                  f"{', '.join(allowed)}{did_you_mean(value, allowed)}")
        return self

    def _check_failure_options(self, where: Callable[[str], str]) -> None:
        from dlsched.sim.checkpoint import parse_interval

        try:
            parse_interval(self.checkpoint_interval)
        except ConfigError as exc:
            raise ConfigError(f"{where('checkpoint_interval')}: {exc}") from None
        from dlsched.scheduling.reconfigure import POLICIES

        if self.resilience not in POLICIES:
            raise ConfigError(f"{where('resilience')}: {self.resilience!r} is not one of "
                              f"{', '.join(POLICIES)}{did_you_mean(self.resilience, POLICIES)}")
        for key in ("checkpoint_seconds", "hot_spares"):
            if not getattr(self, key) >= 0:
                raise ConfigError(f"{where(key)}: must be >= 0, got {getattr(self, key)}")

    def non_defaults(self) -> dict[str, Any]:
        """The options this run sets to other than their defaults (for run.json and reports),
        but for ``out``: where a run is written does not change it."""
        default = RunConfig()
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)
                if f.name != "out" and getattr(self, f.name) != getattr(default, f.name)}

    def to_yaml(self) -> str:
        data = {f.name: _plain(getattr(self, f.name)) for f in fields(self)}
        return yaml.safe_dump(data, sort_keys=False)

    def with_absolute_paths(self) -> RunConfig:
        """This config with its input files (trace, cluster, tenants, services, synthetic
        source, policy files) named by absolute path, for the ``config.yaml`` a run writes:
        ``dlsched simulate --config DIR/config.yaml`` then repeats it from any directory (a
        relative ``cluster: het-small.yaml`` was read from wherever that command ran). Names
        that are not files here (bundled traces, built-in clusters, modules) stay."""
        changes: dict[str, Any] = {name: _absolute(getattr(self, name)) for name in _FILES}
        changes["policy_files"] = tuple(_absolute(name) for name in self.policy_files)
        return replace(self, **changes)


_FILES = ("trace", "cluster", "synthetic_from", "tenants", "services")


def _absolute(name: str | None) -> str | None:
    if name is None or Path(name).is_absolute() or not Path(name).is_file():
        return name
    return os.path.abspath(name)


def _plain(value: Any) -> Any:
    """YAML/JSON form of a field value: policies a list, policy options a mapping."""
    if isinstance(value, tuple) and value and isinstance(value[0], tuple):
        return {k: v for k, v in value}
    if isinstance(value, tuple):
        return list(value)
    return value


def _renamed(src: Any, old: str, new: str) -> Any:
    lines = dict(src.lines)
    lines[new] = lines.get(old, lines.get(""))
    return replace(src, lines=lines)


@cache
def field_types() -> dict[str, Any]:
    return typing.get_type_hints(RunConfig)


def parse_policy_options(pairs: list[str] | tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    parsed = []
    for pair in pairs:
        key, sep, value = str(pair).partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"expected key=value, got {pair!r}")
        parsed.append((key.strip(), value.strip()))
    return tuple(parsed)


def normalized(key: str, value: Any) -> Any:
    """``value`` in its field's canonical shape: 'a,b' or [a, b] -> ('a', 'b') for policies;
    {k: v}, ['k=v'] or [[k, v]] -> (('k', 'v'),) for policy options; ints as floats where the
    field is a float. Anything else is left for ``check_type`` to judge."""
    if key == "policy_files" and isinstance(value, list | tuple):  # repeated, each a,b
        return tuple(p.strip() for item in value for p in str(item).split(",") if p.strip())
    if key in ("policies", "policy_files"):
        if isinstance(value, str):
            return tuple(p.strip() for p in value.split(",") if p.strip())
        if isinstance(value, list | tuple):
            return tuple(value)
    if key == "policy_options":
        return _policy_options(value)
    if key == "checkpoint_interval" and _is_number(value):
        return str(value)  # seconds, as text beside the rule names
    if _base(field_types().get(key)) is float and _is_number(value):
        return float(value)
    return value


def _policy_options(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple((str(k), _option_text(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        if all(isinstance(v, str) for v in value):
            return parse_policy_options(value)
        if all(isinstance(v, list | tuple) and len(v) == 2 for v in value):
            return tuple((str(k), _option_text(v)) for k, v in value)
    return value


def _option_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        return ":".join(str(v) for v in value)
    return str(value)


def check_type(key: str, value: Any) -> None:
    """A ConfigError unless ``value`` is of field ``key``'s declared type."""
    expected = field_types()[key]
    if not _conforms(value, expected):
        raise ConfigError(f"expected {_describe(expected)}, got {value!r}")


def check_range(f: Any, value: Any) -> None:
    """A ConfigError unless a number is finite and within the field's ``low``..``high``."""
    if not _is_number(value):
        return
    if value != value or value in (float("inf"), float("-inf")):
        raise ConfigError(f"expected a finite number, got {value!r}")
    low, high = f.metadata.get("low", -float("inf")), f.metadata.get("high", float("inf"))
    if not low <= value <= high:
        raise ConfigError(f"{value!r} is out of range ({low:g} to {high:g})")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _base(hint: Any) -> Any:
    """``X`` of ``X | None``; the hint itself otherwise."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) and len(args) == 1:
        return args[0]
    return hint


def _conforms(value: Any, hint: Any) -> bool:
    if isinstance(hint, types.UnionType):
        return any(_conforms(value, arm) for arm in typing.get_args(hint))
    if hint is type(None):
        return value is None
    origin = typing.get_origin(hint)
    if origin is tuple:
        args = typing.get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(map(_conforms, value, args))
    if hint is float:
        return _is_number(value)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)


def _describe(hint: Any) -> str:
    if isinstance(hint, types.UnionType):
        arms = [_describe(a) for a in typing.get_args(hint) if a is not type(None)]
        return " or ".join(arms) + (" (or null)" if type(None) in typing.get_args(hint) else "")
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if typing.get_origin(args[0]) is tuple:
            return "a mapping of option: value (or a list of key=value)"
        return f"a list of {_describe(args[0])} (or comma-separated text)"
    return {str: "text", int: "an integer", float: "a number", bool: "true or false"}.get(
        hint, getattr(hint, "__name__", str(hint)))
