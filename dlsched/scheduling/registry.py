"""The policy registry: ``@register_policy("name")`` on a function that builds a Profile.

Adding a policy is one module under ``dlsched/policies`` plus its test; the registry imports the
policies package on first use so every decorated builder is known. A policy of one's own need
not live in the package: ``load_policy_files`` imports a Python file or an installed module
whose builders then register the same way (``--policy-file``, the run config's
``policy_files``; each process of a comparison or sweep imports them again from its config).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib
import importlib.util
import inspect
import math
import pkgutil
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

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
            raise ValueError(f"policy {name!r} registered twice (policy names are unique: "
                             f"rename one)")
        doc = inspect.getdoc(builder) or ""
        _POLICIES[name] = PolicyInfo(name, builder, doc.splitlines()[0] if doc else "")
        return builder

    return decorate


_LOADED: set[str] = set()  # policy files (absolute paths) and modules already imported


def load_policy_files(sources: Iterable[str]) -> None:
    """Import each source (a ``.py`` file, or a module name such as ``mylab.policies``) once,
    registering the policies it defines. A file that is missing or fails to import, or a policy
    name that is taken, is a ``ConfigError`` naming the file (and line) and the registry is
    left as it was before that source."""
    _load_policies()
    for source in sources:
        is_file = source.endswith(".py") or "/" in source or "\\" in source
        key = str(Path(source).expanduser().resolve()) if is_file else source
        if key in _LOADED:
            continue
        if is_file and not Path(key).is_file():
            raise ConfigError(f"policy file {source}: no such file")
        before = set(_POLICIES)
        try:
            _import_file(Path(key)) if is_file else importlib.import_module(source)
        except Exception as exc:  # the user's code: any error, named where it happened
            for name in set(_POLICIES) - before:
                del _POLICIES[name]
            raise ConfigError(f"policy file {source}: {_where_failed(exc, key)}") from None
        _LOADED.add(key)


def _import_file(path: Path) -> None:
    name = "dlsched_policy_file_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look their module up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise


def _where_failed(exc: Exception, key: str) -> str:
    """``line N: Type: message`` at the deepest line of the source that raised (its own
    lines, not dlsched's), or the message alone."""
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f"line {exc.lineno}: SyntaxError: {exc.msg}"
    lines = [frame.lineno for frame in traceback.extract_tb(exc.__traceback__)
             if frame.filename == key]
    what = f"{type(exc).__name__}: {exc}"
    return f"line {lines[-1]}: {what}" if lines else what


def at_least(minimum: float, **values: float) -> None:
    """A builder's check of numeric options: a ``ValueError`` (the registry's ``policy P:``
    error) naming the first value below ``minimum``; NaN is below every minimum."""
    for name, value in values.items():
        if not value >= minimum:
            raise ValueError(f"{name} must be >= {minimum:g}, got {value}")


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


def option_names(name: str) -> tuple[str, ...]:
    """The options policy ``name`` has (its builder's keyword arguments), but ``placement``,
    which ``--placement`` sets; none for an unknown name."""
    info = policies().get(name)
    if info is None:
        return ()
    return tuple(p for p in inspect.signature(info.builder).parameters if p != "placement")


def build_policy(name: str, options: Mapping[str, str] | None = None,
                 placement: str | None = None) -> Profile:
    """A fresh Profile for ``name``; ``options`` are the builder's keyword arguments as text."""
    known = policies()
    if name not in known:
        hint = _meant(name, known)
        raise ConfigError(f"unknown policy {name!r} (known: {', '.join(known)}){hint}")
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
    if not isinstance(profile, Profile):  # a lab's builder that forgot its return
        raise ConfigError(f"policy {name}: its builder {getattr(builder, '__name__', builder)}() "
                          f"returned {type(profile).__name__}, not a Profile "
                          "(dlsched.scheduling.profile.Profile)")
    profile.options = {k: str(v) for k, v in (options or {}).items()}
    return profile


def _meant(name: str, names: Iterable[str]) -> str:
    """``; did you mean 'NAME'?`` for the known name most like a mistyped one, or nothing;
    in any case (``FIFO`` had no hint: too far from ``fifo`` as written)."""
    folded = {known.casefold(): known for known in names}
    close = difflib.get_close_matches(name.casefold(), list(folded), n=1)
    return f"; did you mean {folded[close[0]]!r}?" if close else ""


def _convert_options(policy: str, builder: ProfileBuilder, raw: dict[str, str]) -> dict:
    params = inspect.signature(builder).parameters
    converted: dict[str, object] = {}
    for key, text in raw.items():
        if key not in params:
            allowed = ", ".join(option_names(policy)) or "none"
            raise ConfigError(f"policy {policy}: unknown option {key!r} (options: {allowed})"
                              + _meant(key, option_names(policy)))
        converted[key] = _parse_value(policy, key, params[key].default, text)
    return converted


def _parse_value(policy: str, key: str, default: object, text: str) -> object:
    if not isinstance(text, str):
        return text
    if not text.strip() and not isinstance(default, str):  # "thresholds=": not "no queues"
        raise ConfigError(f"policy {policy}: option {key}= has no value "
                          f"(default {_as_written(default)})")
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
                          f"({_expected(default)}default {_as_written(default)})") from None
    return text


def _as_written(default: object) -> str:
    """A default as the option is written (``thresholds=3600``, not ``(3600.0,)``)."""
    if isinstance(default, tuple):
        return ":".join(f"{x:g}" if isinstance(x, float) else str(x) for x in default) or "''"
    if isinstance(default, bool):
        return str(default).lower()
    if isinstance(default, float):
        return f"{default:g}"
    return "none" if default is None else str(default)


def _expected(default: object) -> str:
    """What a value of ``default``'s kind looks like, where the default alone does not say."""
    if isinstance(default, tuple):
        return "numbers separated by ':', "
    if isinstance(default, bool):
        return "true or false, "
    return ""


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
