"""The Ray worker actor's start, without a Ray cluster (Ray's runtime context stubbed): a
command that cannot start at all raises ``CannotStart``, which the Ray executor reports as
not worth a retry (Ray's task error is an instance of the actor's exception's class); one
that could not start for another reason raises a plain ``OSError``, retried with backoff."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

ray = pytest.importorskip("ray")

from dlsched.runtime.executors.base import CannotStart  # noqa: E402
from dlsched.runtime.executors.ray_worker import WorkerProcess  # noqa: E402


@pytest.fixture(autouse=True)
def no_ray_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    context = SimpleNamespace(get_node_id=lambda: "node-0")
    monkeypatch.setattr(ray, "get_runtime_context", lambda: context)


def test_no_such_executable_cannot_start(tmp_path: Path) -> None:
    with pytest.raises(CannotStart, match="dlsched-no-such-program: not found on PATH"):
        WorkerProcess().start(["dlsched-no-such-program"], {}, None, str(tmp_path / "log"))


def test_a_log_that_cannot_be_written_is_not_the_commands_fault(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("")  # a file where the log's folder should be
    with pytest.raises(OSError) as raised:
        WorkerProcess().start(["true"], {}, None, str(tmp_path / "taken" / "log"))
    assert not isinstance(raised.value, CannotStart)


ACROSS_RAY = """
import ray
from dlsched.runtime.executors.base import CannotStart
from dlsched.runtime.executors.ray_worker import WorkerProcess
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
actor = ray.remote(num_cpus=0)(WorkerProcess).remote()
try:
    ray.get(actor.start.remote(["dlsched-no-such-program"], {}, None, LOG))
except ray.exceptions.RayError as exc:
    print("cannot-start" if isinstance(exc, CannotStart) else "retryable")
ray.shutdown()
"""


def test_cannot_start_crosses_ray_as_its_class(tmp_path: Path) -> None:
    """``RayExecutor._collect_pids`` tells a command that cannot start by ``isinstance(exc,
    CannotStart)`` on Ray's task error: true only while Ray's error keeps the actor's
    exception's class (a local Ray, in a process of its own: one driver per process)."""
    import os
    import subprocess
    import sys

    code = ACROSS_RAY.replace("LOG", repr(str(tmp_path / "log")))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    if "cannot-start" not in done.stdout and "retryable" not in done.stdout:
        pytest.skip(f"Ray cannot start here: {done.stderr.strip()[-300:]}")
    assert done.stdout.split()[-1] == "cannot-start"
