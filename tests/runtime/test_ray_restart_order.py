"""The Ray executor's start rule without a Ray cluster: a resize stops a job and starts it again
in one cycle; the new attempt must not reserve anything until every worker of the old one has
exited (it may be writing its checkpoint). The Ray calls are replaced by recorders; the queue,
phases and ``poll`` are the executor's own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from dlsched.runtime.executors.base import AttemptBook, CannotStart, ExecutorSettings, Outcome
from dlsched.runtime.executors.ray import Phase, RayExecutor, _Attempt
from dlsched.workload.job import Job, JobSpec


class NoLease:
    """The orphan-timeout lease (``ray_lease.py``) without Ray: nothing to renew or end."""

    def renew(self, owner: str) -> None: ...

    def end(self) -> None: ...


def bare_executor(reserved: list[tuple[int, ...]]) -> RayExecutor:
    executor = RayExecutor.__new__(RayExecutor)  # no ray.init: nothing below talks to Ray
    executor.settings = ExecutorSettings(grace_seconds=5.0)
    AttemptBook.__init__(executor, _Attempt)  # the queues, as RayExecutor.__init__ sets them
    executor._down, executor._next_node_check = frozenset(), float("inf")
    executor._found, executor._adopting = None, {}  # nothing of an old service to adopt
    executor.owner, executor.lease = "dlsched-test", NoLease()  # type: ignore[assignment]
    executor.ray = None  # handed to the attempts' calls; with no actors they never use it
    executor._reserve = lambda attempt: reserved.append(attempt.gpus)  # type: ignore[method-assign]
    executor._signal = lambda attempt, signum: None  # type: ignore[method-assign]
    executor._release = lambda attempt: None  # type: ignore[method-assign]
    return executor


def test_a_resized_job_starts_again_only_after_its_old_attempt_exited() -> None:
    reserved: list[tuple[int, ...]] = []
    executor = bare_executor(reserved)
    job = Job(JobSpec("j", 0.0, 1, 10.0, min_gpus=1, max_gpus=4))
    job.allocation = (0,)
    executor.start(job, 0.0)
    old = executor._active["j"]
    old.phase, old.launched, old.number = Phase.RUNNING, True, 1
    job.allocation = (0, 1, 2, 3)  # what the core does in one cycle: stop, then start
    executor.stop(job, 1.0)
    executor.signal_stops()  # as the service does once it has recorded the stop
    executor.start(job, 1.0)
    assert reserved == [(0,)]
    assert executor.poll() == []  # the old worker still runs: nothing new is reserved
    assert reserved == [(0,)]
    old.codes[0] = 0  # it saved its checkpoint and exited
    ended = executor.poll()
    assert [(e.attempt, e.outcome) for e in ended] == [(1, Outcome.STOPPED)]
    assert reserved == [(0,), (0, 1, 2, 3)]
    assert list(executor._active) == ["j"] and not executor._stopping


def test_a_job_whose_gpus_ray_has_not_reserved_says_so() -> None:
    executor = bare_executor([])
    job = Job(JobSpec("j", 0.0, 1, 10.0))
    job.allocation = (0,)
    executor.start(job, 0.0)
    assert executor.unlaunched_reason("j").startswith("waiting for Ray to reserve its GPUs")
    executor._active["j"].phase = Phase.RUNNING
    assert executor.unlaunched_reason("j") == ""
    assert executor.unlaunched_reason("other") == ""


class TaskError(RuntimeError):
    """Ray's ``RayTaskError`` stand-in (the fake ``ray.exceptions.RayError``)."""


class CannotStartTask(TaskError, CannotStart):
    """What Ray raises for an actor's ``CannotStart``: an instance of both classes."""


def raising_ray(error: Exception) -> SimpleNamespace:
    def get(ref: object, timeout: float | None = None) -> int:
        raise error

    return SimpleNamespace(wait=lambda refs, num_returns, timeout: (refs, []), get=get,
                           exceptions=SimpleNamespace(RayError=TaskError))


@pytest.mark.parametrize(("error", "retryable"), [
    (CannotStartTask("dlsched-x: not found on PATH"), False),
    (TaskError("OSError: [Errno 28] No space left on device"), True),
], ids=["cannot-start", "other-start-error"])
def test_a_worker_that_cannot_start_ends_its_attempt_not_retryable(
        error: Exception, retryable: bool, tmp_path: Path) -> None:
    executor = bare_executor([])
    executor.ray = raising_ray(error)
    attempt = _Attempt("j", (0,))
    attempt.number, attempt.log_path, attempt.pid_refs = 1, tmp_path / "log", ["ref"]
    executor._active["j"] = attempt
    executor._collect_pids(attempt)
    [end] = executor._ended
    assert end.outcome is Outcome.FAILED and "could not start its workers" in end.message
    assert end.retryable is retryable
