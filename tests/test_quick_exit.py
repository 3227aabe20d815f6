"""The console script's exit without teardown after a finished run (dlsched/quick_exit.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dlsched import quick_exit

# The console script's own entry (``dlsched = dlsched.cli:app``), with an exit handler that
# leaves a mark and output in stdout's buffer (a pipe: block-buffered), and an object that
# leaves one when the interpreter's teardown frees it.
_ENTRY = """
import atexit, sys
from pathlib import Path


def handler(path):
    path.write_text("ran")
    print("printed by an exit handler", flush=False)


class TornDown:  # freed at the interpreter's teardown, which a quick exit skips
    def __init__(self, path):  # what __del__ needs, kept: the teardown clears modules
        import os
        self.fd, self.write = os.open(path, os.O_WRONLY | os.O_CREAT), os.write

    def __del__(self):
        self.write(self.fd, b"freed")


mark = Path(sys.argv.pop())
atexit.register(handler, mark)
kept = TornDown(mark.with_suffix(".teardown"))
from dlsched.cli import app
sys.argv = ["dlsched", *sys.argv[1:]]
app()
"""


def _console(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _ENTRY, *args, str(tmp_path / "handler")],
                          capture_output=True, text=True, timeout=300)


def test_a_finished_simulate_exits_with_every_output_and_exit_handler(tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = _console(tmp_path, "simulate", "--trace", "pollux-1", "--cluster", "pollux-64",
                    "--policy", "fifo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "printed by an exit handler" in done.stdout  # flushed before the process ended
    assert "fifo: 160/160 finished" in done.stderr
    assert (tmp_path / "handler").read_text() == "ran"  # atexit handlers still run
    assert (tmp_path / "handler.teardown").read_text() == ""  # the teardown did not
    assert json.loads((out / "summary.json").read_text())["jobs_finished"] == 160
    assert len((out / "jobs.csv").read_text().splitlines()) == 161


def test_a_failed_command_exits_as_usual(tmp_path: Path) -> None:
    done = _console(tmp_path, "simulate", "--trace", "no-such-trace", "--cluster", "pollux-64",
                    "--policy", "fifo", "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert "error:" in done.stderr
    assert (tmp_path / "handler").read_text() == "ran"
    assert (tmp_path / "handler.teardown").read_text() == "freed"


@pytest.fixture
def armed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Armed without ``arm`` (which would freeze this test process's heap)."""
    monkeypatch.setattr(quick_exit._State, "enabled", True)
    monkeypatch.setattr(quick_exit._State, "armed", True)


def _exits(monkeypatch: pytest.MonkeyPatch, code: object, others: bool | None = False
           ) -> list[int]:
    """What ``leave(code)`` passes to ``os._exit``, with ``others`` telling whether another
    non-daemon thread is alive (None: this test process's own threads decide)."""
    ended: list[int] = []
    if others is not None:
        monkeypatch.setattr(quick_exit, "others_alive", lambda: others)
    monkeypatch.setattr(quick_exit.os, "_exit", ended.append)
    monkeypatch.setattr(quick_exit.atexit, "_run_exitfuncs", lambda: None)
    quick_exit.leave(code)
    return ended


@pytest.mark.usefixtures("armed")
@pytest.mark.parametrize("code", [0, None])
def test_armed_and_alone_a_success_ends_the_process(monkeypatch: pytest.MonkeyPatch,
                                                     code: object) -> None:
    assert _exits(monkeypatch, code) == [0]


@pytest.mark.usefixtures("armed")
@pytest.mark.parametrize("code", [1, 2, "message"])
def test_a_failure_code_is_left_to_the_interpreter(monkeypatch: pytest.MonkeyPatch,
                                                   code: object) -> None:
    assert _exits(monkeypatch, code) == []


def _with_thread(daemon: bool) -> tuple[threading.Thread, threading.Event]:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait, daemon=daemon)
    other.start()
    return other, stop


@pytest.mark.usefixtures("armed")
def test_another_live_thread_keeps_the_usual_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    other, stop = _with_thread(daemon=False)
    try:
        assert quick_exit.others_alive()
        assert _exits(monkeypatch, 0, others=None) == []
        assert _exits(monkeypatch, 0, others=True) == []
    finally:
        stop.set()
        other.join()


@pytest.mark.parametrize("daemon", [True, False])
def test_only_a_non_daemon_thread_counts(monkeypatch: pytest.MonkeyPatch, daemon: bool) -> None:
    """The interpreter's exit does not wait for a daemon thread either; rich's progress bar
    leaves its refresh thread winding down when it stops (the CI failure of 2026-12-06: the
    console script then tore down as usual)."""
    other, stop = _with_thread(daemon=daemon)
    try:  # this one and the main thread only (earlier tests may leave others)
        monkeypatch.setattr(quick_exit.threading, "enumerate",
                            lambda: [threading.current_thread(), other])
        assert other.is_alive() and quick_exit.others_alive() is not daemon
    finally:
        stop.set()
        other.join()
    assert not quick_exit.others_alive()  # ended


def test_not_armed_nothing_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quick_exit._State, "armed", False)
    assert _exits(monkeypatch, 0) == []


def test_arm_outside_the_console_script_changes_nothing(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    monkeypatch.setattr(quick_exit._State, "enabled", False)
    monkeypatch.setattr(quick_exit._State, "armed", False)
    frozen = []
    monkeypatch.setattr(quick_exit.gc, "freeze", lambda: frozen.append(True))
    quick_exit.arm()
    assert not quick_exit._State.armed and not frozen
