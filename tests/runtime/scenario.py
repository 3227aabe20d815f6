"""The README scenario, shared by the local and the Ray executor tests: three example jobs on
4 GPUs, one preempted and resumed with a weight digest identical to an uninterrupted run.

Under SRTF with ``work_seconds`` estimates (so the victim is certain, not a race):
- A, the 2-worker data-parallel transformer (work 1000), and C, the 1-worker CNN (work 500),
  start; 1 GPU stays free;
- once A has trained a few steps, P, the same transformer with another digest file (work 10),
  arrives and needs 2 GPUs: SRTF evicts the job with the longest remaining time, A. A gets
  SIGTERM, saves at the step it is in and exits 0; P runs uninterrupted (the reference);
- A resumes from its checkpoint when 2 GPUs are free, and its final digest equals P's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime_helpers import Live, wait_for
from test_service_e2e import job, kinds, submit, wait_status

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# 0.2 s a step: A is still training when P arrives (its reporter posts at most once a second,
# so at 0.02 s a step A had finished all 20 steps before "step >= 5" was seen, and the
# preemption only landed in A's exit window).
TRANSFORMER = ["--steps", "20", "--batch-size", "16", "--seed", "3", "--checkpoint-every", "5",
               "--step-delay", "0.2"]
CNN = ["--steps", "150", "--batch-size", "16", "--checkpoint-every", "50", "--step-delay",
       "0.05"]


@dataclass(frozen=True)
class Outcome:
    preempted: dict[str, Any]  # A, at the end
    reference: dict[str, Any]  # P
    other: dict[str, Any]  # C
    digests: tuple[str, str]  # A's, P's
    log: str  # A's last attempt


def example(script: str, args: list[str], digest: Path) -> list[str]:
    return [sys.executable, str(EXAMPLES / script), *args, "--digest-out", str(digest)]


def preempt_and_resume(handle: Live, out: Path, **fields: Any) -> Outcome:
    """Run the scenario through the service's API; ``fields`` go to every submission."""
    fields = {"env": {"OMP_NUM_THREADS": "1"}, **fields}
    long_job = submit(handle, example("train_transformer.py", TRANSFORMER, out / "a.digest"),
                      2, work_seconds=1000, name="A", **fields)
    other = submit(handle, example("train_cnn.py", CNN, out / "c.digest"), 1,
                   work_seconds=500, name="C", **fields)
    wait_for(lambda: (job(handle, long_job)["last_progress"] or {}).get("step", 0) >= 5, 60,
             "A to train a few steps")
    assert job(handle, other)["status"] == "running"  # so P does not fit without evicting
    reference = submit(handle, example("train_transformer.py", TRANSFORMER, out / "p.digest"),
                       2, work_seconds=10, name="P", **fields)
    wait_for(lambda: "preempted" in kinds(handle, long_job), 30, "A's preemption")
    results = [wait_status(handle, job_id, "finished", timeout=90)
               for job_id in (long_job, reference, other)]
    log = handle.http.get(f"/v1/jobs/{long_job}/logs").text
    return Outcome(*results, ((out / "a.digest").read_text(), (out / "p.digest").read_text()),
                   log)


def check(outcome: Outcome) -> None:
    assert [a["outcome"] for a in outcome.preempted["attempt_history"]] == [
        "stopped", "succeeded"]
    assert outcome.reference["attempts"] == 1 and outcome.other["attempts"] == 1
    assert "resumed from step" in outcome.log
    assert "resumed from step 20" not in outcome.log  # preempted while it trained
    assert outcome.digests[0] == outcome.digests[1]
    assert len(outcome.digests[0].strip()) == 64
