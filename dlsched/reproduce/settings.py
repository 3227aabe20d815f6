"""Named settings: a peer's simulator as dlsched run options, per policy (``settings/*.yaml``).

A setting is documented data, not a fork of a policy: ``defaults`` are ``RunConfig`` keys (the
keys of a ``--config`` run file) for every policy, ``policies`` adds or overrides keys per
policy; each file says where each value comes from. ``Setting.config("tiresias")`` is the
``RunConfig`` a user would write by hand for that run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from dlsched.errors import ConfigError
from dlsched.experiment import RunConfig

_KEYS = {"name", "description", "source", "defaults", "policies"}


@dataclass(frozen=True)
class Setting:
    name: str
    description: str
    source: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    policies: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def config(self, policy: str, **overrides: Any) -> RunConfig:
        """The run of ``policy`` in this setting (``overrides``: e.g. trace, out)."""
        if policy not in self.policies:
            raise ConfigError(f"setting {self.name} has no run for policy {policy!r} "
                              f"(it has: {', '.join(self.policies)})")
        values = {**self.defaults, **self.policies[policy], **overrides, "policies": policy}
        try:
            return RunConfig().with_values(values)
        except TypeError as exc:
            raise ConfigError(f"setting {self.name}: {exc}") from None


def settings_dir() -> Path:
    return Path(str(resources.files("dlsched.reproduce").joinpath("settings")))


def setting_names() -> list[str]:
    return sorted(p.stem for p in settings_dir().glob("*.yaml"))


def load_setting(name: str) -> Setting:
    path = settings_dir() / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"no setting {name!r} (known: {', '.join(setting_names())})")
    return read_setting(path)


def read_setting(path: Path) -> Setting:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: cannot read setting: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("policies"), dict):
        raise ConfigError(f"{path}: a setting is a mapping with a 'policies' mapping")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    return Setting(str(data.get("name", path.stem)), str(data.get("description", "")),
                   str(data.get("source", "")), dict(data.get("defaults") or {}),
                   {str(k): dict(v or {}) for k, v in data["policies"].items()})
