"""Retry with exponential backoff after a failed attempt (``dlsched/runtime/backoff.py``): the
delay rule, the pending reason while a job backs off, and the gaps between real attempts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from runtime_helpers import Live, records, wait_for, worker
from test_service_e2e import job, submit, wait_status

from dlsched.runtime.backoff import backoff_delay


@pytest.mark.parametrize(("failures", "base", "cap", "delay"), [
    (0, 10.0, 360.0, 0.0),  # no failure yet
    (1, 10.0, 360.0, 10.0),
    (2, 10.0, 360.0, 20.0),
    (3, 10.0, 360.0, 40.0),
    (6, 10.0, 360.0, 320.0),
    (7, 10.0, 360.0, 360.0),  # capped
    (500, 10.0, 360.0, 360.0),  # no overflow
    (3, 0.0, 360.0, 0.0),  # disabled
], ids=["none", "first", "second", "third", "sixth", "capped", "huge", "disabled"])
def test_delay_doubles_from_base_up_to_the_cap(failures: int, base: float, cap: float,
                                               delay: float) -> None:
    assert backoff_delay(failures, base, cap) == delay


def test_failed_attempts_are_retried_after_growing_delays(
        live: Callable[..., Live], out: Path) -> None:
    handle = live(max_attempts=3, retry_backoff=0.5)
    job_id = submit(handle, worker("fail", out), 1)
    detail = wait_status(handle, job_id, "failed", timeout=30)
    attempts = detail["attempt_history"]
    assert [a["outcome"] for a in attempts] == ["failed"] * 3
    gaps = [later["started_at"] - earlier["ended_at"]
            for earlier, later in zip(attempts, attempts[1:], strict=False)]
    # 0.5 s, then 1 s: the lower bounds show the doubling; the upper ones only a bound on
    # how late a loaded machine may be
    assert 0.5 <= gaps[0] < 5.0 and 1.0 <= gaps[1] < 6.0, gaps
    assert len(records(out, job_id)) == 3
    assert "gave up after 3 failures" in detail["pending_reason"]


def test_a_backing_off_job_says_why_it_waits(live: Callable[..., Live], out: Path) -> None:
    handle = live(max_attempts=2, retry_backoff=30.0)
    job_id = submit(handle, worker("fail", out), 1)
    detail = wait_for(lambda: "backing off" in (j := job(handle, job_id))["pending_reason"]
                      and j, 10, "the backoff reason")
    assert "backing off after 1 failed attempt: retries 30 s after the failure" in \
        detail["pending_reason"]
    behind = submit(handle, worker("sleep", out, 0), 1)  # strict FIFO: held behind it
    other = submit(handle, worker("sleep", out, 0), 1, queue="q2")
    wait_status(handle, other, "finished")  # the GPUs are free: only the backoff holds it
    assert job(handle, behind)["pending_reason"] == f"waiting behind {job_id} (strict FIFO)"
    assert job(handle, job_id)["status"] == detail["status"] != "running"
    assert job(handle, job_id)["attempts"] == 1


def test_a_command_that_cannot_start_fails_at_once(live: Callable[..., Live]) -> None:
    """No such executable: the job failed after three attempts 10 s and 20 s apart (~30 s)
    with "exited with code 127"-like reasons; it fails at its first, saying why."""
    handle = live(max_attempts=3, retry_backoff=30.0)
    job_id = submit(handle, ["dlsched-no-such-program-s35"], 1)
    detail = wait_status(handle, job_id, "failed", timeout=10)
    assert [a["outcome"] for a in detail["attempt_history"]] == ["failed"]
    assert detail["pending_reason"] == (
        "attempt 1 failed: could not start its workers: dlsched-no-such-program-s35: not "
        "found on PATH (not retried: the command cannot start)")
    # its "started" event read "attempt 1, pids []", as if it had run with no process
    started = [e["message"] for e in handle.http.get(f"/v1/jobs/{job_id}/events").json()
               if e["kind"] == "started"]
    assert started == ["attempt 1, no worker started"]
