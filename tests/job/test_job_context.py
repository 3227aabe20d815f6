"""JobContext: the environment contract read into a typed, frozen view, and the stop flag."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
from pathlib import Path

import pytest

from dlsched.job import JobContext, JobEnvError

SERVICE_ENV = {
    "DLSCHED_JOB_ID": "j42", "DLSCHED_ATTEMPT": "3", "RANK": "1", "WORLD_SIZE": "4",
    "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.7", "MASTER_PORT": "29877",
    "CUDA_VISIBLE_DEVICES": "2,3", "DLSCHED_CHECKPOINT_DIR": "/ckpt/j42",
    "DLSCHED_SERVICE_URL": "http://sched:8080/", "DLSCHED_TOKEN": "s3cret",
    "DLSCHED_GRACE_SECONDS": "12.5",
}


@pytest.mark.parametrize(("env", "expected"), [
    pytest.param({}, dict(job_id="local", attempt=1, rank=0, world_size=1, local_rank=0,
                          master_addr="127.0.0.1", master_port=29500, visible_devices=None,
                          service_url=None, token=None, grace_seconds=30.0), id="nothing-set"),
    pytest.param(SERVICE_ENV, dict(job_id="j42", attempt=3, rank=1, world_size=4, local_rank=1,
                                   master_addr="10.0.0.7", master_port=29877,
                                   visible_devices=("2", "3"), checkpoint_dir=Path("/ckpt/j42"),
                                   service_url="http://sched:8080", token="s3cret",
                                   grace_seconds=12.5), id="from-the-service"),
    pytest.param({"CUDA_VISIBLE_DEVICES": ""}, dict(visible_devices=()), id="no-gpus"),
    pytest.param({"CUDA_VISIBLE_DEVICES": "GPU-1a2b, GPU-3c4d"},
                 dict(visible_devices=("GPU-1a2b", "GPU-3c4d")), id="gpu-uuids"),
    pytest.param({"DLSCHED_SERVICE_URL": "", "DLSCHED_TOKEN": "", "RANK": " "},
                 dict(service_url=None, token=None, rank=0), id="empty-means-unset"),
])
def test_from_env(env: dict[str, str], expected: dict[str, object]) -> None:
    ctx = JobContext.from_env(env)
    assert {name: getattr(ctx, name) for name in expected} == expected


@pytest.mark.parametrize(("env", "message"), [
    pytest.param({"RANK": "2", "WORLD_SIZE": "2"}, "RANK must be in [0, 2)", id="rank-too-big"),
    pytest.param({"RANK": "-1"}, "RANK must be in", id="negative-rank"),
    pytest.param({"WORLD_SIZE": "0"}, "WORLD_SIZE must be >= 1", id="empty-world"),
    pytest.param({"MASTER_PORT": "http"}, "MASTER_PORT must be an integer", id="bad-port"),
    pytest.param({"MASTER_PORT": "70000"}, "MASTER_PORT must be in 1..65535", id="port-range"),
    pytest.param({"DLSCHED_ATTEMPT": "0"}, "1-based", id="attempt-0"),
    pytest.param({"DLSCHED_GRACE_SECONDS": "soon"}, "must be a number", id="bad-grace"),
    pytest.param({"DLSCHED_GRACE_SECONDS": "-3"}, "DLSCHED_GRACE_SECONDS must be a finite "
                 "number of seconds >= 0, got -3", id="negative-grace"),
    pytest.param({"DLSCHED_GRACE_SECONDS": "nan"}, "DLSCHED_GRACE_SECONDS must be a finite "
                 "number of seconds >= 0, got nan", id="nan-grace"),
    pytest.param({"LOCAL_RANK": "3"}, "LOCAL_RANK must be in [0, 1), got 3",
                 id="local-rank-beyond-the-world"),
    pytest.param({"LOCAL_RANK": "-1", "WORLD_SIZE": "2"}, "LOCAL_RANK must be in [0, 2), got -1",
                 id="negative-local-rank"),
])
def test_bad_env_is_a_clear_error(env: dict[str, str], message: str) -> None:
    with pytest.raises(JobEnvError, match=re.escape(message)):
        JobContext.from_env(env)


def test_checkpoint_dir_env_wins_over_default(tmp_path: Path) -> None:
    env = {"DLSCHED_CHECKPOINT_DIR": str(tmp_path / "service")}
    assert JobContext.from_env(env, tmp_path / "mine").checkpoint_dir == tmp_path / "service"
    assert JobContext.from_env({}, tmp_path / "mine").checkpoint_dir == tmp_path / "mine"


def test_default_checkpoint_dir_is_private_to_a_local_run_but_shared_by_ranks() -> None:
    local = JobContext.from_env({}).checkpoint_dir
    assert str(os.getpid()) in local.name
    ranks = [JobContext.from_env({"RANK": str(r), "WORLD_SIZE": "2", "MASTER_PORT": "29611"})
             for r in range(2)]
    assert ranks[0].checkpoint_dir == ranks[1].checkpoint_dir
    assert "29611" in ranks[0].checkpoint_dir.name


def test_frozen_and_token_not_in_repr() -> None:
    ctx = JobContext.from_env(SERVICE_ENV)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ctx.rank = 0  # type: ignore[misc]
    assert "s3cret" not in repr(ctx)
    assert not ctx.is_chief and ctx.is_distributed
    assert JobContext.from_env({}).is_chief


def test_sigterm_only_sets_the_stop_flag() -> None:
    ctx = JobContext.from_env({})
    previous = ctx.install_signal_handler()
    try:
        assert not ctx.stop_requested
        os.kill(os.getpid(), signal.SIGTERM)  # delivered before the next bytecode here
        assert ctx.stop_requested
        assert ctx._stop.signal_number == signal.SIGTERM
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]


def test_request_stop_without_a_signal() -> None:
    ctx = JobContext.from_env({})
    ctx.request_stop()
    assert ctx.stop_requested
