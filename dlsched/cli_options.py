"""The options of ``dlsched simulate`` and ``compare``, derived from ``RunConfig``'s fields.

One source of truth: a field's type is the option's type, its metadata the help (and the flag,
where it is not ``--field-name``), its default the default shown in ``--help``. A flag left out
is None, so that a run file (``--config``) can supply it; flags given override the file.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import Field, fields
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from dlsched.run_config import RunConfig, field_types

CONFIG_HELP = "A YAML run file with the same keys as these options; flags override it."
RunCommand = Callable[[RunConfig], None]


def flag_of(f: Field, policy_flag: str = "--policies") -> str:
    """The option's flag: ``--policy-opt`` for ``policy_options``, ``--skip-invalid`` for
    ``skip_invalid`` (whose negative is ``--strict-input``)."""
    if f.name == "policies":
        return policy_flag
    return f.metadata.get("flag", "--" + f.name.replace("_", "-"))


def flags(policy_flag: str = "--policies") -> dict[str, str]:
    """Field name -> its flag as users type it (``--policy-opt``), for error messages."""
    return {f.name: flag_of(f, policy_flag).split("/")[0] for f in fields(RunConfig)}


def _cli_type(name: str) -> Any:
    """What the command line gives for a field: text for the list of policies (comma
    separated), repeatable key=value text for policy options, the field's own scalar type
    otherwise."""
    if name in ("policy_options", "policy_files"):  # repeatable
        return list[str] | None
    hint = field_types()[name]
    scalar = next((a for a in (str, int, float, bool) if a is hint or a in hint.__args__),
                  str) if hasattr(hint, "__args__") else hint
    return scalar | None


def _default_text(f: Field) -> str:
    value = f.default
    if value is None or value == ():
        return ""
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _parameter(f: Field, policy_flag: str, policy_help: str | None) -> inspect.Parameter:
    text = policy_help if f.name == "policies" and policy_help else f.metadata["help"]
    default = _default_text(f)  # shown as text: the option's own default is None (not given)
    option = typer.Option(flag_of(f, policy_flag), help=escape(text + (
        f" [default: {default}]" if default else "")), show_default=False,
        metavar={"policy_options": "KEY=VALUE", "policy_files": "FILE"}.get(f.name))
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[_cli_type(f.name), option])


def workers_parameter() -> inspect.Parameter:
    """``--workers``: how many policies of a ``compare`` run at the same time."""
    option = typer.Option("--workers", help=(
        "Policies run at the same time, each on its own process (default: one per policy, "
        "at most one per CPU; 1: one after another in this process). The outputs are the "
        "same either way."), show_default=False, metavar="<int>")
    return inspect.Parameter("workers", inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[int | None, option])


def _config_parameter() -> inspect.Parameter:
    option = typer.Option("--config", help=CONFIG_HELP, exists=True, dir_okay=False)
    return inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, default=None,
                             annotation=Annotated[Path | None, option])


def run_command(body: Callable[..., None], policy_flag: str,
                policy_help: str | None = None,
                extra: Sequence[inspect.Parameter] = ()) -> Callable[..., None]:
    """A Typer command with one option per ``RunConfig`` field plus ``--config`` and the
    ``extra`` options (how to run, not what: they are not part of the run's config); it
    calls ``body(config_file, flags)`` with the flags given (None where not)."""
    params = [_parameter(f, policy_flag, policy_help) for f in fields(RunConfig)]
    params.append(_config_parameter())
    params.extend(extra)

    @functools.wraps(body)
    def command(**given: Any) -> None:
        config_file = given.pop("config", None)
        body(config_file, given)

    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    del command.__wrapped__  # typer must read the signature above, not body's
    return command


def config_from(config_file: Path | None, given: dict[str, Any],
                policy_flag: str) -> RunConfig:
    """The run the flags ``given`` (and the run file, if any) describe; an error names a flag
    as typed (``--jobs-format``) or a file's ``file:line:key``."""
    names = flags(policy_flag)

    def where(key: str) -> str:
        return names.get(key, key)

    if config_file is not None:
        return RunConfig.from_yaml(config_file, given, where)
    return RunConfig().with_values(given, where)
