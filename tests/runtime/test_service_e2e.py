"""The service end to end over HTTP, with the local executor and 4 fake GPUs running the test
workers: gang start, GPU indices, failures and retries, preemption and resume under Tiresias,
cancel, why-pending, progress, logs, cluster and queue views."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from runtime_helpers import Live, records, wait_for, worker


def submit(live: Live, command: list[str], gpus: int, **fields: Any) -> str:
    response = live.http.post("/v1/jobs", json={"command": command, "gpus": gpus, **fields})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def job(live: Live, job_id: str) -> dict[str, Any]:
    return live.http.get(f"/v1/jobs/{job_id}").json()


def wait_status(live: Live, job_id: str, status: str, timeout: float = 60.0) -> dict[str, Any]:
    return wait_for(lambda: (j := job(live, job_id))["status"] == status and j, timeout,
                    f"{job_id} to be {status}")


def kinds(live: Live, job_id: str) -> list[str]:
    return [e["kind"] for e in live.http.get(f"/v1/jobs/{job_id}/events").json()]


def test_gangs_start_together_on_disjoint_gpus(live: Callable[..., Live], out: Path) -> None:
    handle = live()
    first = submit(handle, worker("sleep", out, 1.0), 2, name="a")
    second = submit(handle, worker("sleep", out, 1.0), 2)
    for job_id in (first, second):
        detail = wait_status(handle, job_id, "finished")
        assert detail["attempts"] == 1
        assert kinds(handle, job_id) == ["submitted", "scheduled", "started", "finished"]
    devices = []
    for job_id in (first, second):
        ranks = records(out, job_id)
        assert sorted(r["RANK"] for r in ranks) == ["0", "1"]
        assert {r["WORLD_SIZE"] for r in ranks} == {"2"}
        # one gang: its ranks start together (the bound allows for 2 loaded cores)
        assert max(r["started"] for r in ranks) - min(r["started"] for r in ranks) < 15.0
        devices += [r["CUDA_VISIBLE_DEVICES"] for r in ranks]
        submitted = job(handle, job_id)["submitted_at"]
        print(f"{job_id}: submit -> first worker running "
              f"{min(r['started'] for r in ranks) - submitted:.3f} s")
    assert sorted(devices) == ["0", "1", "2", "3"]  # both ran at once, on different GPUs
    assert "worker job-000001-a1-r" in handle.http.get(f"/v1/jobs/{first}/logs").text


def test_a_failing_job_is_retried_then_given_up(live: Callable[..., Live], out: Path) -> None:
    handle = live(max_attempts=2)
    job_id = submit(handle, worker("fail", out), 2)
    detail = wait_status(handle, job_id, "failed")
    assert detail["attempts"] == 2
    assert "rank 0 exited with code 1" in detail["pending_reason"]
    assert "gave up after 2 failures" in detail["pending_reason"]
    assert kinds(handle, job_id).count("requeued") == 1
    outcomes = [a["outcome"] for a in detail["attempt_history"]]
    assert outcomes == ["failed", "failed"]
    assert len(records(out, job_id)) == 4  # 2 attempts x 2 ranks, rank 1 killed each time


def test_tiresias_preempts_and_the_job_resumes_from_its_checkpoint(
        live: Callable[..., Live], out: Path) -> None:
    handle = live(policy="tiresias", options={"thresholds": "2"}, grace=5.0)
    big = submit(handle, worker("preemptible", out, 60), 4)
    wait_for(lambda: len(records(out, big)) == 4, 15, "the big job to run")
    # 4 GPUs x 0.5 s later it has 2 GPU-seconds and drops to the second queue.
    wait_for(lambda: handle.service.core.jobs[big].attained_service(
        handle.service.clock.now()) > 2.5, 10, "the big job to pass the threshold")
    small = submit(handle, worker("sleep", out, 0.3), 2)
    wait_status(handle, small, "finished")
    detail = wait_status(handle, big, "finished")
    assert detail["attempts"] == 2
    assert [a["outcome"] for a in detail["attempt_history"]] == ["stopped", "succeeded"]
    assert kinds(handle, big).count("preempted") == 1
    assert len(list(out.glob(f"{big}-a1-r*.sigterm"))) == 4  # every rank checkpointed
    resumed = sorted(out.glob(f"{big}-a2-r*.resumed"))
    assert [p.read_text() for p in resumed] == [f"{big}-a1-r{r}" for r in range(4)]
    stopped = max(p.stat().st_mtime for p in out.glob(f"{big}-a1-r*.sigterm"))
    assert min(r["started"] for r in records(out, small)) >= stopped - 0.05  # no GPU shared
    assert "dlsched_preemptions_total 1.0" in handle.http.get("/metrics").text


def test_cancel_stops_the_workers_with_sigkill_after_the_grace_period(
        live: Callable[..., Live], out: Path) -> None:
    handle = live(grace=0.5)
    job_id = submit(handle, worker("stubborn", out), 1)
    wait_for(lambda: records(out, job_id), 15, "the worker to start")
    assert handle.http.delete(f"/v1/jobs/{job_id}").json()["status"] == "cancelled"
    detail = wait_for(lambda: (j := job(handle, job_id))["attempt_history"][0]["outcome"] and j,
                      10, "the attempt to end")
    assert detail["attempt_history"][0]["outcome"] == "stopped"
    assert "SIGKILL" in detail["attempt_history"][0]["message"]
    assert handle.http.get("/v1/cluster").json()["gpus_allocated"] == 0


def test_why_pending_position_progress_and_views(live: Callable[..., Live], out: Path) -> None:
    handle = live()
    running = submit(handle, worker("sleep", out, 30), 3)
    waiting = submit(handle, worker("sleep", out, 0), 2, queue="q2")
    behind = submit(handle, worker("sleep", out, 0), 1, queue="q2")
    wait_status(handle, running, "running")
    detail = wait_for(lambda: (j := job(handle, waiting))["pending_reason"] and j, 10,
                      "a cycle to look at the waiting job")
    assert detail["status"] == "pending" and detail["queue_position"] == 1
    assert "needs 2 GPUs" in detail["pending_reason"]
    second = job(handle, behind)  # strict FIFO: it may not overtake the head of its queue
    assert second["queue_position"] == 2
    assert second["pending_reason"] == f"waiting behind {waiting} (strict FIFO)"
    assert handle.http.post(f"/v1/jobs/{running}/progress",
                            json={"step": 5, "samples_per_second": 12.5}).status_code == 204
    progress = job(handle, running)["last_progress"]
    assert (progress["step"], progress["samples_per_second"]) == (5, 12.5)
    assert [slot["index"] for slot in job(handle, running)["allocation"]] == [0, 1, 2]
    gpus = handle.http.get("/v1/cluster").json()["nodes"][0]["gpus"]
    assert [g["job_id"] for g in gpus] == [running] * 3 + [None]
    queues = {q["name"]: q for q in handle.http.get("/v1/queues").json()}
    assert (queues["default"]["running"], queues["q2"]["pending"]) == (1, 2)
    listed = handle.http.get("/v1/jobs", params={"status": "pending"}).json()
    assert [(j["id"], j["pending_reason"]) for j in listed][1] == (
        behind, second["pending_reason"])
    handle.http.delete(f"/v1/jobs/{running}")
    wait_status(handle, behind, "finished")
