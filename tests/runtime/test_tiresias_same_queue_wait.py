"""Tiresias keeps a queue's running jobs on their GPUs (§3.2; the authors' simulator alike):
a 4-GPU job submitted before a 1-GPU job that started beside a 2-GPU job waits, once the
2-GPU job ends, until the 1-GPU job ends; it does not preempt it (``same_queue_preemption``
off). The service and the simulator agree on it (one code path), and the waiting job's reason
says so: before, it read only "needs 4 GPUs, 3 free on fitting nodes" (session 33)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from builders import make_cluster, make_job, simulator
from runtime_helpers import Live, records, wait_for, worker

RULE = "[tiresias] not preempted: 1 running job of its own queue 0 (1 GPU)"


def test_simulator_waits_behind_the_later_job_of_its_queue_and_says_why() -> None:
    jobs = [make_job("pair").at(0).gpus(2).work(10).build(),
            make_job("big").at(1).gpus(4).work(5).queue("research").build(),
            make_job("small").at(2).gpus(1).work(100).build()]
    result = simulator("tiresias", make_cluster(nodes=1, gpus=4), jobs, max_time=50.0).run()
    by_id = {r.job_id: r for r in result.jobs}
    assert by_id["small"].first_start == 2.0 and by_id["big"].status == "pending"
    assert by_id["big"].pending_reason == (
        "[placement] needs 4 GPUs, 3 free on fitting nodes; " + RULE
        + "; it preempts only lower queues (policy option same_queue_preemption=true: also "
        "the later jobs of its own)")
    ends = {r.job_id: r.finish_time for r in simulator(
        "tiresias", make_cluster(nodes=1, gpus=4), jobs).run().jobs}
    assert ends["big"] == ends["small"] + 5.0  # it starts when the later job ends


def test_same_queue_preemption_lets_it_evict_the_later_job() -> None:
    jobs = [make_job("pair").at(0).gpus(2).work(10).build(),
            make_job("big").at(1).gpus(4).work(5).build(),
            make_job("small").at(2).gpus(1).work(100).build()]
    records_ = {r.job_id: r for r in simulator(
        "tiresias", make_cluster(nodes=1, gpus=4), jobs,
        options={"same_queue_preemption": True}).run().jobs}
    assert records_["big"].first_start == 10.0 and records_["small"].preemptions == 1


def test_service_waits_alike_and_says_why(live: Callable[..., Live], out: Path) -> None:
    """The service (local executor, 4 GPUs): the same order of events, the same reason."""
    handle = live(policy="tiresias")
    http = handle.http
    pair = http.post("/v1/jobs", json={"command": worker("sleep", out, 60), "gpus": 2}).json()
    wait_for(lambda: len(records(out, pair["id"])) == 2, 10, "the 2-GPU job to run")
    big = http.post("/v1/jobs", json={"command": worker("sleep", out, 0.1), "gpus": 4,
                                      "queue": "research"}).json()["id"]
    small = http.post("/v1/jobs", json={"command": worker("sleep", out, 60),
                                        "gpus": 1}).json()["id"]
    wait_for(lambda: records(out, small), 10, "the 1-GPU job to start beside the 2-GPU one")
    http.delete(f"/v1/jobs/{pair['id']}")
    reason = wait_for(lambda: RULE in (r := http.get(f"/v1/jobs/{big}").json()[
        "pending_reason"]) and r, 10, "the 4-GPU job to say why it waits")
    assert reason.startswith("[placement] needs 4 GPUs, 3 free")
    assert http.get(f"/v1/jobs/{big}").json()["status"] == "pending"
    http.delete(f"/v1/jobs/{small}")
    wait_for(lambda: http.get(f"/v1/jobs/{big}").json()["status"] in ("running", "finished"),
             20, "the 4-GPU job to start once the 1-GPU job ends")


def test_jobs_of_higher_queues_are_named_apart() -> None:
    """A 4-GPU job demoted at 2.5 s (10 GPU-s) is preempted at 5 s by a 2-GPU job of queue 0;
    waiting in queue 1, it may not preempt that job of a higher queue, nor a 1-GPU job of
    queue 0 that starts at 6 s (the cycle that tries it again)."""
    jobs = [make_job("a").at(0).gpus(4).work(100).build(),
            make_job("b").at(5).gpus(2).work(100).build(),
            make_job("c").at(6).gpus(1).work(100).build()]
    result = simulator("tiresias", make_cluster(nodes=1, gpus=4), jobs,
                       options={"thresholds": (10.0,)}, max_time=7.0).run()
    reason = {r.job_id: r.pending_reason for r in result.jobs}["a"]
    assert reason.endswith("[tiresias] not preempted: 2 running jobs of higher queues (3 GPUs); "
                           "it preempts only lower queues (policy option "
                           "same_queue_preemption=true: also the later jobs of its own)"), reason
