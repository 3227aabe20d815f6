"""One part of a run's reports written on a forked process while this one writes the rest.

A whole-Philly ``dlsched simulate`` spent ~1 s writing files after its simulation, on one core
while the other idled. ``aside(call)`` forks a child that runs ``call`` on the parent's
memory as it is (copy on write: nothing is pickled but the call's small return value) and
hands back its result or its exception when asked (``Aside.result``); ``run_policy`` writes
timeline.csv and segments.csv (with tenants, the audit files too) there, and the jobs table
and the summary here meanwhile.

It forks only where that is safe and useful: on Linux (macOS' system libraries are not safe
in a forked child, which is why Python's own process pools spawn there); from the only thread
of the process (a fork copies every lock, and one held by another thread would stay held in
the child: the CLI closes its progress bar, and joins its refresh thread, first); with more
than one CPU free to this process; not from a worker of a pool (whose siblings already use
the other CPUs); and with memory for a second copy of this process (the child shares its
pages until either writes them, and reading a Python object writes its reference count: a
child that reads millions of jobs' records copies their pages). Otherwise ``aside`` returns
None and the caller runs the call itself: the files are the same either way.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from dlsched.cpus import available_cpus
from dlsched.errors import DlschedError

T = TypeVar("T")


def may_fork() -> bool:
    """Whether ``aside`` would fork now (see the module's docstring)."""
    if not sys.platform.startswith("linux") or threading.active_count() != 1:
        return False
    if multiprocessing.parent_process() is not None:
        return False
    return available_cpus() > 1 and _room_for_a_copy()


def _room_for_a_copy() -> bool:
    """Whether the memory available exceeds this process's resident size (Linux's
    ``/proc``; elsewhere assumed)."""
    try:
        return room_in(Path("/proc/self/statm").read_text(), Path("/proc/meminfo").read_text(),
                       os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError):
        return True


def room_in(statm: str, meminfo: str, page_bytes: int) -> bool:
    """``_room_for_a_copy`` from the texts of ``/proc/self/statm`` (its second field: pages
    resident) and ``/proc/meminfo`` (``MemAvailable`` in KiB); True when either says
    nothing."""
    fields = statm.split()
    available = next((line.split()[1] for line in meminfo.splitlines()
                      if line.startswith("MemAvailable:")), None)
    if len(fields) < 2 or available is None:
        return True
    return int(available) * 1024 > int(fields[1]) * page_bytes


class Aside(Generic[T]):
    """A call running on a forked child; ``result`` waits for it."""

    def __init__(self, pid: int, reader: int) -> None:
        self._pid, self._reader = pid, reader
        self._done = False

    def result(self) -> T:
        """The call's return value, or its exception raised here."""
        if self._done:
            raise RuntimeError("Aside.result() was already read")
        self._done = True
        with os.fdopen(self._reader, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(self._pid, 0)
        if not payload:
            raise RuntimeError(f"the process writing part of the reports ended without an "
                               f"answer ({_how_it_ended(status)})")
        ok, value = pickle.loads(payload)
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]


def aside(call: Callable[[], T]) -> Aside[T] | None:
    """Run ``call`` on a forked child and return at once; None (nothing run) where forking
    is not safe or not useful (``may_fork``)."""
    if not may_fork():
        return None
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        os.close(reader)
        _answer(writer, call)
    os.close(writer)
    return Aside(pid, reader)


def _answer(writer: int, call: Callable[[], Any]) -> None:
    """Run the call, send (ok, value or exception) to the parent, and end the process
    without the interpreter's teardown (the parent's exit handlers, buffers and files are
    not this process's to run or flush)."""
    code = 0
    try:
        try:
            payload = pickle.dumps((True, call()))
        except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
            code = 1
            payload = pickle.dumps((False, _portable(exc)))
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(payload)
    except BaseException:  # noqa: BLE001 - the parent reports an empty answer
        code = 2
    finally:
        os._exit(code)


def _portable(exc: BaseException) -> BaseException:
    """The exception itself where it survives pickling, else one that says the same."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:  # noqa: BLE001 - a class with its own constructor arguments
        kind = DlschedError if isinstance(exc, DlschedError) else RuntimeError
        return kind(f"{type(exc).__name__}: {exc}")
    return exc


def _how_it_ended(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"
