"""A sweep's grid: policies × traces × clusters × seeds × option values, expanded into runs.

Each run is a ``RunConfig`` (the CLI's options), so a sweep runs exactly what ``dlsched
simulate`` would for the same options. A run's key is a hash of its config (all of it but
``out``): a resumed sweep recognises the runs it already finished by their keys, and a grid
that grows keeps the old runs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from dlsched.errors import ConfigError
from dlsched.run_config import RunConfig, _plain

SYNTHETIC_PREFIX = "synthetic:"
LABELS = ("trace", "cluster", "policy", "seed")
# Options a grid may not vary or fix: the grid's own axes, and where runs are written.
_OWN = frozenset({"trace", "cluster", "policies", "seed", "out"})
_FIELDS = frozenset(f.name for f in fields(RunConfig))


@dataclass(frozen=True)
class SweepSpec:
    """What to sweep. ``traces``: bundled names or files (``synthetic:NAME`` is a synthetic
    trace resampled from NAME, whose jobs differ by seed); ``options``: ``RunConfig`` fields
    fixed for every run; ``vary``: more axes, each a ``RunConfig`` field or a policy option
    (``key`` or ``policy:key``) with its values."""

    traces: tuple[str, ...]
    clusters: tuple[str, ...]
    policies: tuple[str, ...]
    seeds: tuple[int, ...] = (0,)
    options: Mapping[str, Any] = field(default_factory=dict)
    vary: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)

    def check(self) -> SweepSpec:
        for name in ("traces", "clusters", "policies", "seeds"):
            if not getattr(self, name):
                raise ConfigError(f"sweep: name at least one of {name}")
        for key in self.options:
            problem = option_problem(key)
            if problem is not None:
                raise ConfigError(f"sweep option {key!r}: {problem}")
        for key, values in self.vary.items():
            if key in _OWN:
                raise ConfigError(f"--vary {key}: use the sweep's own axis for it")
            if not values:
                raise ConfigError(f"--vary {key}: give at least one value")
        return self


    def unique(self) -> SweepSpec:
        """Each trace, cluster, policy, seed and varied value once: one given twice ran once
        but gave two rows, and ``ci.csv`` counted that run twice."""
        return replace(self, traces=_unique(self.traces), clusters=_unique(self.clusters),
                       policies=_unique(self.policies), seeds=_unique(self.seeds),
                       vary={key: _unique(values) for key, values in self.vary.items()})


def _unique(values: Sequence[Any]) -> tuple[Any, ...]:
    kept: list[Any] = []
    for value in values:  # by ==, not hash: a YAML value may be a list
        if value not in kept:
            kept.append(value)
    return tuple(kept)


@dataclass(frozen=True)
class SweepRun:
    """One run of the grid: its labels (trace, cluster, policy, seed and each varied option),
    its config and its key."""

    labels: dict[str, Any]
    config: RunConfig
    key: str


def expand(spec: SweepSpec) -> list[SweepRun]:
    """Every run of the grid, in a stable order (traces, clusters, policies, varied options,
    seeds); a config error in any run (an unknown policy option) is raised before any runs."""
    from dlsched.experiment import check_options
    from dlsched.scheduling.registry import load_policy_files

    spec = spec.check().unique()
    base = RunConfig().with_values(dict(spec.options), lambda key: f"sweep option {key}")
    if base.policy_files:  # their policies' options are checked next
        load_policy_files(base.policy_files)
    check_options(spec.policies, base.policy_options)
    for key in spec.vary:
        _check_varied(key, spec.policies)
    axes = list(spec.vary.items())
    runs = []
    for trace, cluster, policy in itertools.product(spec.traces, spec.clusters, spec.policies):
        for values in itertools.product(*(v for _, v in axes)):
            varied = dict(zip((k for k, _ in axes), values, strict=True))
            for seed in spec.seeds:
                config = _config(base, trace, cluster, policy, seed, varied)
                try:
                    check_options(config.policies, config.policy_options)
                except ConfigError as exc:
                    raise ConfigError(f"sweep run {trace} / {cluster} / {policy}: "
                                      f"{exc}") from None
                labels = {"trace": trace, "cluster": cluster, "policy": policy, "seed": seed,
                          **{k: str(v) for k, v in varied.items()}}
                runs.append(SweepRun(labels, config, run_key(config)))
    return runs


def _check_varied(key: str, policies: tuple[str, ...]) -> None:
    """A ``--vary`` key is a ``RunConfig`` field, ``policy:key`` of a policy being run that has
    that option, or a plain key some policy being run has (the error names ``--vary``, which
    the user typed, not ``--policy-opt``)."""
    from dlsched.scheduling.registry import accepts, option_names

    if key in _FIELDS:
        return
    target, sep, name = key.rpartition(":")
    if sep and target not in policies:
        raise ConfigError(f"--vary {key}: policy {target!r} is not being run (--policies "
                          f"{','.join(policies)})")
    if sep and not accepts(target, name):
        raise ConfigError(f"--vary {key}: policy {target} has no option {name!r} (see "
                          f"`dlsched policies`){_closest(name, option_names(target))}")
    if not sep and not any(accepts(p, key) for p in policies):
        known = (_FIELDS - _OWN).union(*(option_names(p) for p in policies))
        raise ConfigError(f"--vary {key}: neither an option of `dlsched simulate` (by field "
                          f"name, e.g. limit) nor an option of {', '.join(policies)}"
                          f"{_closest(key, known)}")


def option_problem(key: str) -> str | None:
    """Why a sweep may not fix option ``key`` for every run (None: it may)."""
    if key in _OWN or key not in _FIELDS:
        return (f"not an option a sweep may set (the grid sets "
                f"{', '.join(sorted(_OWN - {'out'}))}){_closest(key, _FIELDS - _OWN)}")
    return None


def _closest(key: str, names: Iterable[str]) -> str:
    """``; did you mean 'NAME'?`` for the name most like a mistyped ``key``, or nothing."""
    from difflib import get_close_matches

    close = get_close_matches(key, sorted(names), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _config(base: RunConfig, trace: str, cluster: str, policy: str, seed: int,
            varied: Mapping[str, Any]) -> RunConfig:
    values: dict[str, Any] = {"cluster": cluster, "policies": (policy,), "seed": seed}
    if trace.startswith(SYNTHETIC_PREFIX):
        values.update(trace="synthetic", synthetic_from=trace[len(SYNTHETIC_PREFIX):])
    else:
        values["trace"] = trace
    options = list(base.policy_options)
    for key, value in varied.items():
        if key in _FIELDS:
            values[key] = value
        else:
            options.append((key, str(value)))
    values["policy_options"] = _for_policy(policy, options)
    return replace(base, policy_options=()).with_values(values, lambda key: f"sweep {key}")


def _for_policy(policy: str, options: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """The options that apply to ``policy`` (``policy:key`` for it, or a plain key it
    accepts), as plain keys. A fifo run in a grid that varies ``tiresias:thresholds`` has the
    same config, hence key, at each value: it is run once and its row repeated per value."""
    from dlsched.experiment import options_for

    return tuple(options_for(policy, tuple(options)).items())


def run_key(config: RunConfig) -> str:
    """A hash of everything that decides a run's results (all options but ``out``)."""
    data = {f.name: _plain(getattr(config, f.name)) for f in fields(config) if f.name != "out"}
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_seeds(text: str) -> tuple[int, ...]:
    """``0-4`` or ``0,1,7`` (or a mix: ``0-2,9``) as seeds."""
    seeds: list[int] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        low, dash, high = part.partition("-")
        try:
            first, last = (int(low), int(high)) if dash else (int(part), int(part))
        except ValueError:
            raise ConfigError(f"--seeds: expected N, N-M or a comma list, got {part!r}") \
                from None
        if first > last:
            raise ConfigError(f"--seeds {part}: the first seed is larger than the last")
        seeds.extend(range(first, last + 1))
    if not seeds:
        raise ConfigError("--seeds: give at least one seed")
    return tuple(dict.fromkeys(seeds))


def parse_assignments(pairs: Sequence[str], flag: str, many: bool) -> dict[str, Any]:
    """``key=value`` texts (``many``: ``key=v1,v2``) with YAML scalars as values (``300`` is an
    int, ``true`` a bool); a policy option's value stays text."""
    import yaml

    parsed: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{flag}: expected key=value, got {pair!r}")
        if many and key in parsed:  # the last would silently drop the values of the first
            raise ConfigError(f"{flag} {key}: given twice; list all its values in one "
                              f"{flag} {key}=V1,V2,...")
        texts = [t.strip() for t in raw.split(",")] if many else [raw.strip()]
        if "" in texts:  # YAML reads "" as null: say it rather than guess it
            raise ConfigError(f"{flag} {pair!r}: an empty value (write null for none)")
        values = tuple(yaml.safe_load(t) if key in _FIELDS else t for t in texts)
        parsed[key] = values if many else values[0]
    return parsed
