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
