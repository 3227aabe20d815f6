"""Part of a run's reports written on a forked process (report/aside.py)."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dlsched.experiment as experiment
from dlsched.cli import app
from dlsched.errors import DlschedError
from dlsched.report import aside as aside_module
from dlsched.report.aside import aside, may_fork

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")


@pytest.fixture(autouse=True)
def _two_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """``may_fork`` as on a host with CPUs to spare (CI may pin the tests to one), and runs of
    any size written aside."""
    monkeypatch.setattr(aside_module.os, "sched_getaffinity", lambda _pid: {0, 1},
                        raising=False)
    monkeypatch.setattr(experiment, "ASIDE_MIN_JOBS", 0)


class _Unpicklable(DlschedError):
    def __init__(self, what: str, code: int) -> None:  # two arguments: pickling fails
        super().__init__(f"{what} ({code})")


def test_the_call_runs_on_another_process_and_its_value_comes_back() -> None:
    assert may_fork()
    pending = aside(os.getpid)
    assert pending is not None
    assert pending.result() != os.getpid()


def test_the_childs_exception_is_raised_in_the_parent() -> None:
    def fails() -> None:
        raise OSError(28, "No space left on device")

    pending = aside(fails)
    assert pending is not None
    with pytest.raises(OSError, match="No space left"):
        pending.result()


def test_an_exception_that_does_not_pickle_comes_back_as_its_message() -> None:
    def fails() -> None:
        raise _Unpicklable("bad row", 3)

    pending = aside(fails)
    assert pending is not None
    with pytest.raises(DlschedError, match=r"_Unpicklable: bad row \(3\)"):
        pending.result()


def test_a_child_that_dies_is_told() -> None:
    pending = aside(lambda: os.kill(os.getpid(), signal.SIGKILL))
    assert pending is not None
    with pytest.raises(RuntimeError, match="killed by signal 9"):
        pending.result()


def test_no_fork_while_another_thread_runs() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not may_fork()
        assert aside(os.getpid) is None
    finally:
        stop.set()
        other.join()
    assert may_fork()


def test_no_fork_on_one_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aside_module.os, "sched_getaffinity", lambda _pid: {0},
                        raising=False)
    assert aside(os.getpid) is None


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each run's files were written aside (a fork), in order of the runs."""
    seen: list[bool] = []

    def watched(call):  # type: ignore[no-untyped-def]
        pending = aside(call)
        seen.append(pending is not None)
        return pending

    monkeypatch.setattr(experiment, "aside", watched)
    return seen


def _simulate(out: Path, policy: str = "tiresias") -> None:
    result = CliRunner().invoke(app, [
        "simulate", "--trace", "synthetic", "--synthetic-jobs", "150", "--synthetic-rate",
        "40", "--seed", "5", "--cluster", "gavel-108", "--policy", policy, "--out", str(out)])
    assert result.exit_code == 0, result.output


def test_simulate_writes_the_same_files_forked_or_not(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      forked: list[bool]) -> None:
    _simulate(tmp_path / "forked")
    monkeypatch.setattr(aside_module.os, "sched_getaffinity", lambda _pid: {0},
                        raising=False)
    _simulate(tmp_path / "serial")
    # The CLI closed its progress bar and joined its thread: the first run forked.
    assert forked == [True, False]
    for name in ("jobs.csv", "timeline.csv", "segments.csv", "run.json"):
        assert ((tmp_path / "forked" / name).read_bytes()
                == (tmp_path / "serial" / name).read_bytes()), name


def test_a_failure_writing_aside_fails_the_command(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args, **_kwargs):  # type: ignore[no-untyped-def]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(experiment, "write_timeline", broken)
    result = CliRunner().invoke(app, [
        "simulate", "--trace", "pollux-1", "--cluster", "pollux-64", "--policy", "fifo",
        "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert isinstance(result.exception, OSError) or "No space left" in result.output


def test_no_fork_without_memory_for_a_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    assert aside_module._room_for_a_copy()  # this test process is small
    monkeypatch.setattr(aside_module, "_room_for_a_copy", lambda: False)
    assert aside(os.getpid) is None


@pytest.mark.parametrize(("resident_pages", "available_kib", "room"), [
    (1000, 8000, True),  # 4 MB resident, 8 MiB free
    (3000, 8000, False),  # 12 MB resident
])
def test_room_for_a_copy_reads_resident_and_available_memory(
        resident_pages: int, available_kib: int, room: bool) -> None:
    meminfo = f"MemTotal: 16000 kB\nMemFree: 1 kB\nMemAvailable: {available_kib} kB\n"
    assert aside_module.room_in(f"9999 {resident_pages} 5 0 0", meminfo, 4096) is room
    assert aside_module.room_in("", meminfo, 4096)  # nothing said: assumed


def test_a_small_run_writes_every_file_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            forked: list[bool]) -> None:
    monkeypatch.setattr(experiment, "ASIDE_MIN_JOBS", 151)  # the run below has 150 jobs
    _simulate(tmp_path / "small")
    assert forked == []
    assert (tmp_path / "small" / "segments.csv").exists()
