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


def policy_file_bug(exc: BaseException, policy_files: Sequence[str],
                    policy: str | None = None) -> DlschedError | None:
    """A ``--policy-file``'s own bug met while running (its ``sort_key`` raised): one line at
    the file's line, not a 150-line traceback through the core; None for any other error.
    A worker process's error comes back with its traceback as text (concurrent.futures'
    ``__cause__``), searched the same way. ``policy`` (the run's) and, read from the failing
    frame's arguments where the traceback is this process's, the job it was handling and the
    cycle's time are added at the end: ``(policy mine, job B, t=12 s)``. A module name
    (``mylab.policies``) is found by its file, as a ``.py`` is."""
    import re
    import traceback

    files = _policy_sources(policy_files)
    if not files:
        return None
    frames = [(f.filename, f.lineno, f.name) for f in traceback.extract_tb(exc.__traceback__)]
    frames += re.findall(r'File "([^"]+)", line (\d+), in (\S+)', str(exc.__cause__ or ""))
    mine = [frame for frame in frames if frame[0] in files]
    if not mine:
        return None
    path, line, name = mine[-1]
    context = getattr(exc, CONTEXT, None) or _handling(exc, files, policy)
    return DlschedError(f"policy file {files[path]}: line {line} in {name}: "
                        f"{type(exc).__name__}: {exc}" + (f" ({context})" if context else ""))


CONTEXT = "dlsched_policy_context"  # the attribute ``mark_policy_file_bug`` sets


def mark_policy_file_bug(exc: BaseException, policy_files: Sequence[str], policy: str) -> None:
    """Where ``exc`` came from a policy file's own code: keep ``policy P, job J, t=T s`` on it
    (an attribute, which survives a worker's pickling, and a note that a notebook's traceback
    ends with), read while its traceback still has the frames (``policy_file_bug``)."""
    files = _policy_sources(policy_files)
    if not files or getattr(exc, CONTEXT, None):
        return
    tb, found = exc.__traceback__, False
    while tb is not None and not found:
        found, tb = tb.tb_frame.f_code.co_filename in files, tb.tb_next
    if found:
        context = _handling(exc, files, policy)
        setattr(exc, CONTEXT, context)
        exc.add_note(f"dlsched: raised by a policy file's code ({context})")


def _policy_sources(policy_files: Sequence[str]) -> dict[str, str]:
    """Each source's file (resolved) -> the source as given: a ``.py`` as is, a module by
    where it was imported from (None where it cannot be found: left out)."""
    import importlib.util
    from pathlib import Path

    files: dict[str, str] = {}
    for source in policy_files:
        if source.endswith(".py") or "/" in source or "\\" in source:
            files[str(Path(source).expanduser().resolve())] = source
            continue
        try:
            spec = importlib.util.find_spec(source)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            files[str(Path(spec.origin).resolve())] = source
    return files


def _handling(exc: BaseException, files: dict[str, str], policy: str | None) -> str:
    """``policy P, job J, t=T s``: what the deepest frame of a policy file was handling,
    from its ``job`` and ``state`` arguments (a plugin method's, docs/scheduling.md)."""
    parts = [f"policy {policy}"] if policy else []
    tb, frame = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in files:
            frame = tb.tb_frame
        tb = tb.tb_next
    if frame is not None:
        job, state = frame.f_locals.get("job"), frame.f_locals.get("state")
        if isinstance(getattr(job, "job_id", None), str):
            parts.append(f"job {job.job_id}")
        now = getattr(state, "now", None)
        if isinstance(now, int | float):
            parts.append(f"t={now:.1f}".rstrip("0").rstrip(".") + " s")
    return ", ".join(parts)


class ClusterWarning(UserWarning):
    """A cluster file read as dlsched's model allows, not quite as written (a Slurm node with
    GPUs of two types read as one node per type: ``cluster/sinfo_nodes.py``)."""
