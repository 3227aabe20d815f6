"""A job file's ``env:`` as the service takes it: a mapping of names to strings.

YAML reads ``STEPS: 4`` as a number and ``DEBUG: true`` as a boolean, and the API (JSON, where a
program sends the type it means) takes strings only: the file's ``env`` was refused at its line
for a value any docker-compose user writes unquoted. A number, boolean or date is taken as the
text written in the file (``4``, ``0.5``, ``true``; ``1.10`` stays ``1.10``, not the float's
``1.1``); a list, a mapping or no value is refused at its line, as before.
"""

from __future__ import annotations

from typing import Any

from dlsched.yamlinput import YamlSource


def file_env(env: Any, source: YamlSource) -> dict[str, str]:
    """``env`` of the job file ``source``, each value a string (see the module's docstring)."""
    if not isinstance(env, dict):
        raise source.error("env", f"must be a mapping of NAME: value, got {_kind(env)}")
    return {name: _text(value, f"env.{name}", source) for name, value in env.items()}


def _text(value: Any, key_path: str, source: YamlSource) -> str:
    """A string as it is; any other scalar as written in the file."""
    if isinstance(value, str):
        return value
    if value is None:
        raise source.error(key_path, "has no value (give '' for an empty variable)")
    if isinstance(value, list | dict):
        raise source.error(key_path, f"must be a string or a number, got {_kind(value)}")
    written = source.texts.get(key_path)
    if written is not None:
        return written
    return str(value).lower() if isinstance(value, bool) else str(value)


def _kind(value: Any) -> str:
    """What a YAML value is, in the words of a job file's reader."""
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return "no value" if value is None else repr(value)
