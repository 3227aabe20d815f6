"""Atomic, numbered checkpoints in one directory; framework-agnostic (bytes, pickle, or a writer).

A checkpoint is ``ckpt-<step, 12 digits><suffix>``. It is written to a temp file in the same
directory, flushed and fsynced, then renamed over its final name (``os.replace`` is atomic on
POSIX) and the directory is fsynced: a reader, or a job restarted after ``kill -9`` at any
instant, sees either the previous set of checkpoints or the new one, never a half-written file.
Only the newest ``keep`` checkpoints are kept.
"""

from __future__ import annotations

import logging
import os
import pickle
import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from dlsched.errors import DlschedError

log = logging.getLogger(__name__)

PREFIX = "ckpt-"
TEMP_PREFIX = ".tmp-ckpt-"
STALE_TEMP_SECONDS = 3600.0  # temp files of a writer that died mid-save are removed after this

T = TypeVar("T")


class CheckpointError(DlschedError):
    """No checkpoint could be read although some exist, or a bad step number."""


@dataclass(frozen=True, order=True)
class CheckpointFile:
    step: int
    path: Path


class CheckpointStore:
    """The checkpoints of one job in ``directory`` (created on first save)."""

    def __init__(self, directory: str | Path, keep: int = 3, suffix: str = ".pkl") -> None:
        if keep < 1:
            raise ValueError(f"keep must be >= 1, got {keep}")
        self.directory = Path(directory)
        self.keep = keep
        self.suffix = suffix
        self._name = re.compile(re.escape(PREFIX) + r"(\d+)" + re.escape(suffix) + "$")

    def path_for(self, step: int) -> Path:
        return self.directory / f"{PREFIX}{step:012d}{self.suffix}"

    def checkpoints(self) -> list[CheckpointFile]:
        """Complete checkpoints, oldest first (temp files are never listed)."""
        if not self.directory.is_dir():
            return []
        found = []
        for entry in self.directory.iterdir():
            match = self._name.match(entry.name)
            if match:
                found.append(CheckpointFile(int(match.group(1)), entry))
        return sorted(found)

    def latest(self) -> CheckpointFile | None:
        listed = self.checkpoints()
        return listed[-1] if listed else None

    def save(self, step: int, write: Callable[[BinaryIO], None]) -> CheckpointFile:
        """Write checkpoint ``step`` with ``write(file)``, atomically, then prune old ones."""
        if step < 0:
            raise CheckpointError(f"checkpoint step must be >= 0, got {step}")
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.path_for(step)
        _atomic_write(final, write)
        self.prune()
        return CheckpointFile(step, final)

    def save_bytes(self, step: int, data: bytes) -> CheckpointFile:
        return self.save(step, lambda file: file.write(data))

    def save_object(self, step: int, obj: Any) -> CheckpointFile:
        """Pickle ``obj`` (load it back only from a directory you trust: pickle runs code)."""
        return self.save(step, lambda file: pickle.dump(obj, file, protocol=5))

    def load_latest(self, read: Callable[[Path], T]) -> tuple[int, T] | None:
        """``(step, read(path))`` of the newest readable checkpoint, or None when there is none.

        An unreadable newest file (a damaged disk; never a half-written save) is logged and the
        previous one is tried; if none can be read this raises rather than restart from zero.
        """
        listed = self.checkpoints()
        for checkpoint in reversed(listed):
            try:
                return checkpoint.step, read(checkpoint.path)
            except Exception as error:  # any reader's failure: fall back to an older one
                log.warning("checkpoint %s unreadable (%s); trying an older one",
                            checkpoint.path, error)
        if listed:
            raise CheckpointError(f"none of {len(listed)} checkpoints in {self.directory} "
                                  "could be read")
        return None

    def load_bytes(self) -> tuple[int, bytes] | None:
        return self.load_latest(Path.read_bytes)

    def load_object(self) -> tuple[int, Any] | None:
        return self.load_latest(_unpickle)

    def prune(self) -> None:
        """Keep the newest ``keep`` checkpoints; drop temp files left by writers that died."""
        for checkpoint in self.checkpoints()[:-self.keep]:
            checkpoint.path.unlink(missing_ok=True)
        cutoff = time.time() - STALE_TEMP_SECONDS
        for entry in self.directory.glob(TEMP_PREFIX + "*"):
            try:
                if entry.stat().st_mtime < cutoff:
                    entry.unlink()
            except FileNotFoundError:
                pass


def _atomic_write(final: Path, write: Callable[[BinaryIO], None]) -> None:
    fd, temp_name = tempfile.mkstemp(dir=final.parent, prefix=TEMP_PREFIX, suffix=final.suffix)
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp_name, final)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    _fsync_directory(final.parent)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable (a crash right after could otherwise undo it)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot fsync a directory; the rename is still atomic
    finally:
        os.close(fd)


def _unpickle(path: Path) -> Any:
    with path.open("rb") as file:
        return pickle.load(file)


class CheckpointTimer:
    """When the scheduler's checkpoint interval (``JobContext.checkpoint_seconds``, from
    ``DLSCHED_CHECKPOINT_SECONDS``) has passed since the last save: the loop saves then, so a
    failure loses at most about one interval (the scheduler picks it, e.g. by Young's rule
    ``sqrt(2 x checkpoint cost x MTBF)``). ``seconds`` None: never due."""

    def __init__(self, seconds: float | None, clock: Callable[[], float] = time.monotonic
                 ) -> None:
        self.seconds, self.clock = seconds, clock
        self.last = clock()

    def due(self) -> bool:
        return self.seconds is not None and self.clock() - self.last >= self.seconds

    def saved(self) -> None:
        self.last = self.clock()

