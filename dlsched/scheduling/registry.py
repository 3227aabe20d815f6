"""The policy registry: ``@register_policy("name")`` on a function that builds a Profile.

Adding a policy is one module under ``dlsched/policies`` plus its test; the registry imports the
policies package on first use so every decorated builder is known.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from dlsched.errors import ConfigError
from dlsched.scheduling.profile import Profile

ProfileBuilder = Callable[..., Profile]


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    builder: ProfileBuilder
    summary: str


_POLICIES: dict[str, PolicyInfo] = {}


def register_policy(name: str) -> Callable[[ProfileBuilder], ProfileBuilder]:
    if name != name.lower():
        raise ValueError(f"policy names are lower-case: {name!r}")

    def decorate(builder: ProfileBuilder) -> ProfileBuilder:
        if name in _POLICIES:
            raise ValueError(f"policy {name!r} registered twice")
        doc = inspect.getdoc(builder) or ""
        _POLICIES[name] = PolicyInfo(name, builder, doc.splitlines()[0] if doc else "")
        return builder

    return decorate


def _load_policies() -> None:
    import dlsched.policies as package

    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")


def policies() -> Mapping[str, PolicyInfo]:
    _load_policies()
    return dict(sorted(_POLICIES.items()))


def accepts(name: str, option: str) -> bool:
    """Whether policy ``name`` has an option called ``option``."""
    info = policies().get(name)
    return info is not None and option in inspect.signature(info.builder).parameters


def build_policy(name: str, options: Mapping[str, str] | None = None,
                 placement: str | None = None) -> Profile:
    """A fresh Profile for ``name``; ``options`` are the builder's keyword arguments as text."""
    known = policies()
    if name not in known:
        raise ConfigError(f"unknown policy {name!r} (known: {', '.join(known)})")
    builder = known[name].builder
    kwargs = _convert_options(name, builder, dict(options or {}))
    if placement is not None:
        if not accepts(name, "placement"):
            raise ConfigError(f"policy {name} places its jobs itself: --placement does not apply "
                              f"to it (--policy-opt placement=VALUE sets it for the policies "
                              f"that have the option)")
        kwargs["placement"] = placement
    try:
        profile = builder(**kwargs)
    except ValueError as exc:
        raise ConfigError(f"policy {name}: {exc}") from None
    profile.options = {k: str(v) for k, v in (options or {}).items()}
    return profile


def _convert_options(policy: str, builder: ProfileBuilder, raw: dict[str, str]) -> dict:
    params = inspect.signature(builder).parameters
    converted: dict[str, object] = {}
    for key, text in raw.items():
        if key not in params:
            allowed = ", ".join(p for p in params if p != "placement") or "none"
            raise ConfigError(f"policy {policy}: unknown option {key!r} (options: {allowed})")
        converted[key] = _parse_value(policy, key, params[key].default, text)
    return converted


def _parse_value(policy: str, key: str, default: object, text: str) -> object:
    if not isinstance(text, str):
        return text
    try:
        if isinstance(default, bool):
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(text)
            return text.lower() in ("true", "1", "yes")
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float) or default is None:
            return _number_or_tuple(text)
        if isinstance(default, tuple):
            return tuple(_finite(x) for x in text.split(":") if x)
    except ValueError:
        raise ConfigError(f"policy {policy}: option {key}={text!r} is not valid "
                          f"(default {default!r})") from None
    return text


def _number_or_tuple(text: str) -> object:
    if ":" in text:
        return tuple(_finite(x) for x in text.split(":") if x)
    if text.lower() == "none":
        return None
    return _finite(text)


def _finite(text: str) -> float:
    """A number; ``nan`` and ``inf`` are refused (a round of nan seconds never ends)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value
