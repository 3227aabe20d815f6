"""Errors that name where bad input came from (file, line, field)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


class DlschedError(Exception):
    """Base class of every error dlsched raises on purpose."""


@dataclass(frozen=True)
class InputLocation:
    """Where a value came from: a file, a 1-based line and a field (column) name."""

    path: str
    line: int | None = None
    field: str | None = None

    def __str__(self) -> str:
        parts = [self.path]
        if self.line is not None:
            parts.append(str(self.line))
        if self.field is not None:
            parts.append(self.field)
        return ":".join(parts)


class InputError(DlschedError):
    """A malformed or impossible value in an input file, e.g. ``philly.csv:17:duration: ...``."""

    def __init__(self, location: InputLocation, message: str) -> None:
        self.location = location
        self.message = message
        super().__init__(f"{location}: {message}")

    def __reduce__(self) -> tuple[type[InputError], tuple[InputLocation, str]]:
        # Rebuilt from its own arguments: a sweep's or compare's worker process sends it back
        # pickled, and the default (the formatted text as the only argument) could not be
        # unpickled, which broke the whole process pool with a traceback.
        return type(self), (self.location, self.message)


class ConfigError(DlschedError):
    """An inconsistent configuration (cluster, run or tenant file)."""


def policy_file_bug(exc: BaseException, policy_files: Sequence[str]) -> DlschedError | None:
    """A ``--policy-file``'s own bug met while running (its ``sort_key`` raised): one line at
    the file's line, not a 150-line traceback through the core; None for any other error.
    A worker process's error comes back with its traceback as text (concurrent.futures'
    ``__cause__``), searched the same way."""
    import re
    import traceback
    from pathlib import Path

    files = {str(Path(f).expanduser().resolve()): f for f in policy_files if f.endswith(".py")}
    if not files:
        return None
    frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    frames += re.findall(r'File "([^"]+)", line (\d+), in (\S+)', str(exc.__cause__ or ""))
    mine = [frame for frame in frames if frame[0] in files]
    if not mine:
        return None
    path, line, name = mine[-1]
    return DlschedError(f"policy file {files[path]}: line {line} in {name}: "
                        f"{type(exc).__name__}: {exc}")


class ClusterWarning(UserWarning):
    """A cluster file read as dlsched's model allows, not quite as written (a Slurm node with
    GPUs of two types read as one node per type: ``cluster/sinfo_nodes.py``)."""
