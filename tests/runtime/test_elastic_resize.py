"""An elastic job resized for real (local executor, 4 fake GPUs, Optimus with the ``linear``
model, which needs no profile): it starts on the one GPU a rigid 3-GPU job leaves free; once it
has made progress that job is cancelled, and Optimus's next cycle grows it to 4 (§5.1, marginal
gain). Its worker stops (checkpoint), and a new attempt starts with WORLD_SIZE 4 only after the
old one exited, and resumes from the saved step. Attempts and events in the store show the
resize, and the job does exactly its total number of steps.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from runtime_helpers import Live, records, wait_for, worker
from test_service_e2e import job, kinds, submit, wait_status

TOTAL_STEPS = 40  # ~16 s on one GPU: the resize lands well before the job could end


def test_an_elastic_job_grows_from_1_to_4_gpus_and_resumes(live: Callable[..., Live],
                                                           out: Path) -> None:
    handle = live(policy="optimus", options={"elastic": "declared"})
    blocker = submit(handle, worker("sleep", out, 60), 3)
    elastic = submit(handle, worker("elastic", out, TOTAL_STEPS), 1, min_gpus=1, max_gpus=4)
    step = Path(job(handle, elastic)["checkpoint_dir"]) / "step"
    wait_for(lambda: step.exists() and int(step.read_text() or 0) >= 2, 20, "2 steps on 1 GPU")
    assert job(handle, elastic)["gpus_held"] == 1
    assert handle.http.delete(f"/v1/jobs/{blocker}").status_code == 200
    # Grown, the listing shows the GPUs it holds beside those it asked for (it showed 1).
    wait_for(lambda: job(handle, elastic)["gpus_held"] == 4, 20, "the job holds 4 GPUs")
    listed = next(j for j in handle.http.get("/v1/jobs").json() if j["id"] == elastic)
    assert (listed["gpus"], listed["gpus_held"]) in ((1, 4), (1, None))  # None: just finished
    wait_status(handle, elastic, "finished", timeout=30)
    assert job(handle, elastic)["gpus_held"] is None

    detail = job(handle, elastic)
    attempts = detail["attempt_history"]
    assert [(len(a["gpus"]), a["outcome"]) for a in attempts] == [(1, "stopped"),
                                                                  (4, "succeeded")]
    assert attempts[1]["started_at"] >= attempts[0]["ended_at"]  # never two runs at once
    assert not (out / f"{elastic}.double").exists()
    assert kinds(handle, elastic) == ["submitted", "scheduled", "started", "resized",
                                      "started", "finished"]
    events = handle.http.get(f"/v1/jobs/{elastic}/events").json()
    assert "to 4 GPUs" in next(e["message"] for e in events if e["kind"] == "resized")

    runs = [json.loads(line) for line in (out / f"{elastic}.steps").read_text().splitlines()]
    assert [(r["attempt"], r["world"]) for r in runs] == [(1, 1), (2, 4)]
    assert runs[0]["from"] == 0 < runs[0]["to"] == runs[1]["from"]  # resumed where it stopped
    assert runs[1]["to"] == TOTAL_STEPS
    second = [r for r in records(out, elastic) if r["DLSCHED_ATTEMPT"] == "2"]
    assert sorted(r["RANK"] for r in second) == ["0", "1", "2", "3"]
    assert {r["WORLD_SIZE"] for r in second} == {"4"}
    assert handle.service.core.jobs[elastic].resizes == 1
