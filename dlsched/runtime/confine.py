"""Tenants on one machine: where a job may work, and who may read the service's files.

- **Directories**: a job's ``working_dir`` and ``checkpoint_dir`` may not contain ``..``, may
  not lie inside the service's data directory (its database, tokens, other jobs' logs and
  checkpoints: the service chooses the per-job directory ``DATA_DIR/jobs/ID`` itself), and,
  for a tenant of a tokens file, must lie under one of the tenant's ``paths`` (an allow-list;
  none given: only the per-job directory). Paths are resolved (symlinks followed) when the
  job is submitted.
- **Modes**: the data directory and every directory the service makes in it are 0700; the
  database (SQLite then gives its WAL and shared-memory files the same mode), logs, exit
  statuses and ``service.json`` are 0600: other users of the machine read nothing.

What a single-user install cannot promise: jobs run as the service's own user, so a job can
read whatever that user can (the database with every tenant's commands and environment, the
tokens file, other jobs' logs and checkpoints). ``docs/runtime.md`` says so, and so does a
warning at start when per-tenant tokens are configured.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path


class PathRefused(ValueError):
    """A directory a job may not use (the API answers 400 with this message)."""

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def private_dir(path: Path) -> Path:
    """Make ``path`` (and missing parents) and set it to 0700."""
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    with contextlib.suppress(PermissionError):
        os.chmod(path, PRIVATE_DIR)
    return path


def private_file(path: Path) -> None:
    """Create ``path`` empty if missing, and set it to 0600."""
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE))
    with contextlib.suppress(PermissionError):
        os.chmod(path, PRIVATE_FILE)


def open_private(path: Path, flags: int = os.O_WRONLY | os.O_APPEND | os.O_CREAT) -> int:
    """A file descriptor on ``path``, created 0600."""
    return os.open(path, flags, PRIVATE_FILE)


def secure_database(data_dir: Path, database: str) -> None:
    """0700 on the data directory; 0600 on a SQLite database in it (created now if new, so that
    SQLite makes its ``-wal`` and ``-shm`` files with the same mode) and on those files."""
    private_dir(data_dir)
    prefix = "sqlite:///"
    if not database.startswith(prefix) or database == prefix + ":memory:":
        return
    path = Path(database[len(prefix):])
    path.parent.mkdir(parents=True, exist_ok=True)
    private_file(path)
    for suffix in ("-wal", "-shm", "-journal"):
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            with contextlib.suppress(PermissionError):
                os.chmod(companion, PRIVATE_FILE)


def confined(text: str, field: str, base: Path, data_dir: Path,
             allowed: Sequence[Path] | None, tenant: str) -> Path:
    """``text`` (relative: from ``base``) resolved; ``PathRefused`` naming ``field`` and the
    rule it breaks."""
    path = Path(text)
    if ".." in path.parts:
        raise PathRefused(f"{field} {text!r} may not contain '..'")
    resolved = (path if path.is_absolute() else base / path).resolve()
    data = data_dir.resolve()
    if _within(resolved, data):
        raise PathRefused(f"{field} {text!r} is inside the service's data directory (the "
                          "service chooses each job's directory there)")
    if allowed is not None and not allowed:
        raise PathRefused(f"{field} {text!r}: tenant {tenant!r} has no paths in the tokens file, "
                          f"so its jobs run in their own directories: leave {field} unset "
                          f"(dlsched submit --job-dir; {field}: null in a --file)")
    if allowed is not None and not any(_within(resolved, root) for root in allowed):
        roots = ", ".join(str(root) for root in allowed)
        raise PathRefused(f"{field} {text!r} is outside the directories tenant {tenant!r} "
                          f"may use (its paths in the tokens file: {roots})")
    return resolved


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents
