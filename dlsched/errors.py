"""Errors that name where bad input came from (file, line, field)."""

from __future__ import annotations

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


class ClusterWarning(UserWarning):
    """A cluster file read as dlsched's model allows, not quite as written (a Slurm node with
    GPUs of two types read as one node per type: ``cluster/sinfo_nodes.py``)."""
