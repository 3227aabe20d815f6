"""A stop's intent is durable before its signal: the service commits the attempt's
``stop_time`` and only then sends SIGTERM to the workers (``AttemptBook.signal_stops``). A
``kill -9`` injected at either side of that commit leaves a restart that never adopts workers
that were told to stop (``docs/runtime.md``, "State and recovery")."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import crash, wait_for
from test_restart_transitions import config

from dlsched.runtime.commands import RequestError, cancel, submit
from dlsched.runtime.models import SubmitRequest
from dlsched.runtime.service import Service
from dlsched.runtime.store import Batch

# On SIGTERM: touches ``ARGV[1].term``, checkpoints for 4 s and exits 0 (as ``dlsched.job``
# does when stopped); touches ``ARGV[1]`` once it can take a SIGTERM.
CHECKPOINTS_ON_SIGTERM = (
    "import pathlib, signal, sys, time\n"
    "ready = pathlib.Path(sys.argv[1])\n"
    "def on_term(*_):\n"
    "    ready.with_suffix('.term').touch(); time.sleep(4); sys.exit(0)\n"
    "signal.signal(signal.SIGTERM, on_term)\n"
    "ready.touch()\n"
    "time.sleep(60)")


class _Killed(Exception):
    """The service process dies here (``kill -9``)."""


def _running_job(service: Service, out: Path) -> tuple[str, Path]:
    ready = out / "ready"
    command = [sys.executable, "-c", CHECKPOINTS_ON_SIGTERM, str(ready)]
    job = submit(service, SubmitRequest(command=command, gpus=1)).id
    wait_for(ready.exists, 10, "the job to run")
    return job, ready.with_suffix(".term")


def _die_at_the_stop_commit(service: Service) -> None:
    """The next commit that records a stop kills the service instead."""
    commit = service.store.commit

    def killed(batch: Batch) -> None:
        if batch.stopping_attempts:
            raise _Killed
        commit(batch)

    service.store.commit = killed  # type: ignore[method-assign]


def _die_before_the_signal(service: Service) -> None:
    """The service dies after the stop's commit, before it signals the workers."""
    def killed() -> Any:
        raise _Killed

    service.executor.signal_stops = killed  # type: ignore[method-assign]


def test_a_kill_9_before_the_stop_is_recorded_sends_no_sigterm(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """The SIGTERM went out before the commit: a crash then left the checkpointing workers
    ``running`` in the store, the restart adopted them, and when they exited 0 after their
    checkpoint the job was recorded finished. No signal before the intent is durable: the
    cancel fails, the workers run on untouched, the restart adopts a job that really runs."""
    old = Service(config(tmp_path, grace=20.0))
    old.start()
    job, term = _running_job(old, out)
    _die_at_the_stop_commit(old)
    with pytest.raises(_Killed):
        cancel(old, job)
    crash(old)
    time.sleep(0.5)  # a signal sent would have reached it by now
    assert not term.exists()

    new = Service(config(tmp_path, grace=1.0))
    services.append(new)
    new.start()
    assert "adopted" in [e.kind for e in new.store.events(job)]
    cancel(new, job)  # the cancel the old service never recorded, now done
    wait_for(lambda: new.store.attempts(job)[0].outcome == "stopped", 10, "the stop")
    assert new.store.job(job).status == "cancelled"  # type: ignore[union-attr]


def test_a_kill_9_after_the_stop_is_recorded_never_adopts_the_workers(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """Recorded but not signalled: the restart finds the stop, stops the workers itself and
    closes the attempt ``stopped``; the cancel holds."""
    old = Service(config(tmp_path, grace=20.0))
    old.start()
    job, term = _running_job(old, out)
    _die_before_the_signal(old)
    with pytest.raises(_Killed):
        cancel(old, job)
    crash(old)
    assert not term.exists()
    assert old.store.attempts(job)[0].stop_time is not None

    new = Service(config(tmp_path, grace=1.0))
    services.append(new)
    new.start()
    assert "adopted" not in [e.kind for e in new.store.events(job)]
    assert new.store.attempts(job)[0].outcome == "stopped"
    assert new.store.job(job).status == "cancelled"  # type: ignore[union-attr]
    with pytest.raises(RequestError, match="already ended"):
        cancel(new, job)
