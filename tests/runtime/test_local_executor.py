"""The local executor alone: the environment contract, GPU index mapping across nodes, a start
that waits for stopped workers to release its GPUs, and a command that cannot start."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from runtime_helpers import kill_strays, records, wait_for, worker

from dlsched.cluster.cluster import Cluster, Node
from dlsched.runtime.executors.local import (
    AttemptEnd,
    LaunchPlan,
    LocalExecutor,
    LocalSettings,
    Outcome,
)
from dlsched.workload.job import Job, JobSpec

TWO_NODES = Cluster("two", (Node("n0", "T4", 2), Node("n1", "T4", 2)))


def job_on(job_id: str, gpus: tuple[int, ...]) -> Job:
    job = Job(JobSpec(job_id, 0.0, len(gpus), 100.0))
    job.allocation = gpus
    return job


@pytest.fixture
def executor_for(tmp_path: Path):  # noqa: ANN201
    made: list[LocalExecutor] = []

    def make(commands: dict[str, list[str]], grace: float = 2.0) -> LocalExecutor:
        attempts: dict[str, int] = {}

        def plan(job_id: str) -> LaunchPlan:
            attempts[job_id] = attempts.get(job_id, 0) + 1
            return LaunchPlan(attempts[job_id], tuple(commands[job_id]),
                              str(tmp_path / job_id / "ckpt"),
                              tmp_path / job_id / f"attempt-{attempts[job_id]}.log")

        executor = LocalExecutor(TWO_NODES, plan, LocalSettings(grace, "http://x:1", "tok"))
        made.append(executor)
        return executor

    yield make
    for executor in made:
        executor.drain(0.1)
    kill_strays(tmp_path)


def ended(executor: LocalExecutor, timeout: float = 15.0) -> list[AttemptEnd]:
    return wait_for(executor.poll, timeout, "an attempt to end")


def test_workers_get_the_contract_and_node_local_gpu_indices(executor_for, out: Path) -> None:
    executor = executor_for({"j1": worker("sleep", out, 0)})
    executor.start(job_on("j1", (1, 2)), 0.0)  # GPU 1 of n0 and GPU 0 of n1
    [launch] = executor.take_launched()
    assert (launch.job_id, launch.attempt, launch.gpus, len(launch.pids)) == ("j1", 1, (1, 2), 2)
    [end] = ended(executor)
    assert (end.outcome, end.attempt) == (Outcome.SUCCEEDED, 1)
    first, second = records(out, "j1")
    assert (first["RANK"], first["CUDA_VISIBLE_DEVICES"], first["LOCAL_RANK"]) == ("0", "1", "0")
    assert (second["RANK"], second["CUDA_VISIBLE_DEVICES"], second["LOCAL_RANK"]) == (
        "1", "0", "0")
    for info in (first, second):
        assert info["WORLD_SIZE"] == "2" and info["DLSCHED_ATTEMPT"] == "1"
        assert info["MASTER_ADDR"] == "127.0.0.1" and info["MASTER_PORT"].isdigit()
        assert info["DLSCHED_CHECKPOINT_DIR"].endswith("j1/ckpt")
        assert (info["DLSCHED_SERVICE_URL"], info["DLSCHED_TOKEN"]) == ("http://x:1", "tok")
        assert info["DLSCHED_GRACE_SECONDS"] == "2"
    assert first["MASTER_PORT"] == second["MASTER_PORT"]


def test_a_start_waits_until_stopped_workers_release_its_gpus(executor_for, out: Path) -> None:
    executor = executor_for({"old": worker("stubborn", out), "new": worker("sleep", out, 0)},
                            grace=0.5)
    executor.start(job_on("old", (0,)), 0.0)
    wait_for(lambda: records(out, "old"), 10, "the stubborn worker to start")
    stopped_at = time.monotonic()  # before stop(): the grace starts inside it
    executor.stop(job_on("old", (0,)), 0.0)
    executor.signal_stops()  # as the service does once it has recorded the stop
    executor.start(job_on("new", (0,)), 0.0)
    assert [launch.job_id for launch in executor.take_launched()] == ["old"]  # new waits
    [end] = ended(executor)
    assert end.job_id == "old" and end.outcome is Outcome.STOPPED
    assert "SIGKILL" in end.message
    assert time.monotonic() - stopped_at >= 0.45  # it ignored SIGTERM for the grace period
    wait_for(lambda: [launch.job_id for launch in executor.take_launched()] == ["new"], 5)


def test_a_failed_rank_takes_the_others_down(executor_for, out: Path) -> None:
    executor = executor_for({"j": worker("fail", out)})
    executor.start(job_on("j", (0, 1)), 0.0)
    [end] = ended(executor)
    assert end.outcome is Outcome.FAILED and end.message == "rank 0 exited with code 1"
    assert executor.active_jobs == ()


def test_a_command_that_cannot_start_fails_the_attempt(executor_for) -> None:
    executor = executor_for({"j": ["/nonexistent/dlsched-test-binary"]})
    executor.start(job_on("j", (0,)), 0.0)
    [launch] = executor.take_launched()
    assert launch.pids == ()
    [end] = executor.poll()
    assert end.outcome is Outcome.FAILED and "could not start" in end.message
    assert not end.retryable  # another attempt would fail the same way


def test_a_command_that_fails_once_started_may_be_retried(executor_for, out: Path) -> None:
    executor = executor_for({"j": worker("fail", out)})
    executor.start(job_on("j", (0,)), 0.0)
    [end] = ended(executor)
    assert end.outcome is Outcome.FAILED and end.retryable


def test_a_restart_elsewhere_waits_for_the_jobs_previous_attempt(executor_for, out: Path) -> None:
    executor = executor_for({"j": worker("stubborn", out)}, grace=0.5)
    executor.start(job_on("j", (0,)), 0.0)
    wait_for(lambda: records(out, "j"), 10, "the first attempt to start")
    executor.stop(job_on("j", (0,)), 0.0)
    executor.signal_stops()
    executor.start(job_on("j", (3,)), 0.0)  # other GPUs, same job
    assert [launch.attempt for launch in executor.take_launched()] == [1]
    [end] = ended(executor)
    assert (end.attempt, end.outcome) == (1, Outcome.STOPPED)
    wait_for(lambda: [launch.attempt for launch in executor.take_launched()] == [2], 5)
