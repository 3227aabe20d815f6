"""The scheduler's checkpoint interval (``DLSCHED_CHECKPOINT_SECONDS``): read by the job
context, kept by ``CheckpointTimer``, agreed by every rank, followed by the DDP examples."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dlsched.job import JobContext, JobEnvError
from dlsched.job.checkpoint import CheckpointTimer


@pytest.mark.parametrize(("raw", "seconds"), [(None, None), ("", None), ("30", 30.0),
                                              ("0.25", 0.25)])
def test_the_interval_comes_from_the_environment(raw: str | None, seconds: float | None) -> None:
    env = {} if raw is None else {"DLSCHED_CHECKPOINT_SECONDS": raw}
    assert JobContext.from_env(env).checkpoint_seconds == seconds


@pytest.mark.parametrize(("raw", "message"), [("0", "must be > 0 seconds"),
                                              ("-5", "must be > 0 seconds"),
                                              ("hourly", "must be a number")])
def test_a_bad_interval_names_the_variable(raw: str, message: str) -> None:
    with pytest.raises(JobEnvError, match=f"DLSCHED_CHECKPOINT_SECONDS {message}"):
        JobContext.from_env({"DLSCHED_CHECKPOINT_SECONDS": raw})


def test_timer_is_due_once_the_interval_passed_since_the_last_save() -> None:
    now = [100.0]
    timer = CheckpointTimer(10.0, clock=lambda: now[0])
    now[0] = 109.9
    assert not timer.due()
    now[0] = 110.0
    assert timer.due()
    timer.saved()
    assert not timer.due()
    assert not CheckpointTimer(None).due()


def test_ddp_example_checkpoints_at_the_schedulers_interval(tmp_path: Path) -> None:
    """Two gloo workers, no step-count checkpoints (--checkpoint-every 0): they save on the
    scheduler's 0.3 s interval, every rank at the same steps (a disagreement would hang)."""
    pytest.importorskip("torch")
    from job_helpers import Workers

    args = ["--steps", "30", "--batch-size", "8", "--checkpoint-every", "0",
            "--step-delay", "0.05"]
    with Workers("train_transformer.py", tmp_path / "ckpt", args, 2,
                 extra_env={"DLSCHED_CHECKPOINT_SECONDS": "0.3"}) as workers:
        assert workers.wait(timeout=120) == [0, 0], workers.output()
    saved = [int(s) for s in re.findall(r"checkpoint step (\d+) saved", workers.output())]
    # every ~0.3 s of 30 steps of >= 0.05 s, then the final save at step 30
    assert len([s for s in saved if s < 30]) >= 2 and saved == sorted(saved), workers.output()
    assert sorted(p.name for p in (tmp_path / "ckpt").glob("ckpt-*.pt"))
