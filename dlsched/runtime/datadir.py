"""One service per data directory (and per SQLite file): an exclusive lock held while it runs.

Two services on one database each number jobs from their own counter and schedule the same GPUs
twice (issue 11 item 3: the second answered 500 on ``UNIQUE constraint failed: jobs.seq``). The
lock is ``flock`` on ``DATA_DIR/service.lock`` (and ``FILE.lock`` beside a SQLite file kept
elsewhere with ``--db``): the kernel frees it when the process dies, even by ``kill -9``, so a
crash never leaves a stale lock behind. A database server (``--db postgresql://...``) is not
covered: give each service its own database.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path

from dlsched.errors import ConfigError
from dlsched.runtime.confine import PRIVATE_DIR, PRIVATE_FILE


class DataDirInUse(ConfigError):
    """Another service holds the lock of this data directory or database file."""


def lock_paths(data_dir: Path, database: str) -> list[Path]:
    paths = [data_dir / "service.lock"]
    prefix = "sqlite:///"
    if database.startswith(prefix) and database[len(prefix):] not in ("", ":memory:"):
        db_file = Path(database[len(prefix):])
        if db_file.resolve().parent != data_dir.resolve():
            paths.append(db_file.with_name(db_file.name + ".lock"))
    return paths


@dataclass
class ServiceLock:
    """The locks one service holds; ``release`` lets the next service start."""

    files: list[int] = field(default_factory=list)

    @classmethod
    def acquire(cls, data_dir: Path, database: str) -> ServiceLock:
        held = cls()
        try:
            for path in lock_paths(data_dir, database):
                held.files.append(_lock(path))
        except BaseException:
            held.release()
            raise
        return held

    def release(self) -> None:
        for fd in self.files:
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the descriptor drops its flock
        self.files.clear()


def check_free(data_dir: Path, database: str) -> None:
    """Raise ``DataDirInUse`` now if another service holds the lock (``serve`` checks before
    it binds its port, so the message is about the data directory)."""
    ServiceLock.acquire(data_dir, database).release()


def _lock(path: Path) -> int:
    """The lock file's descriptor, locked. A directory made here is 0700 and the file 0600, as
    the service's own (``confine.py``): the lock is taken before the port is bound, and a
    start that failed there left a 0755 data directory (an existing directory is not changed
    here: the parent of a ``--db`` file outside the data directory is the user's)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _owner(fd)
        os.close(fd)
        raise DataDirInUse(
            f"another dlsched service{owner} is using {path.parent} ({path.name} is locked): "
            "stop it first, or give this one another --data-dir (and --db)") from None
    with contextlib.suppress(PermissionError):
        os.fchmod(fd, PRIVATE_FILE)  # one an older version made 0644
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def _owner(fd: int) -> str:
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode().strip())
        return f" (pid {pid})"
    return ""
