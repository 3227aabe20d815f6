"""The cycle's walk by buckets decides exactly what the job-by-job walk decides (bucket_scan.py):
same starts, preemptions and records on contended random workloads, with pools that split the
jobs into shapes."""

from __future__ import annotations

import random

import pytest
from builders import make_cluster, make_job, simulator

import dlsched.scheduling.scheduler as scheduler_module
from dlsched.scheduling.bucket_scan import FULL_STOP, SMALLEST_FAILED
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.waiting import WaitingQueue
from dlsched.workload.job import Job, JobSpec

SMALLER = "[placement] a job as large or smaller of the same kind did not fit in this cycle"
POLICIES = ["tiresias", "sjf", "backfill", "edf", "srtf"]


def _workload(seed: int, jobs: int = 160) -> list[JobSpec]:
    rng = random.Random(seed)
    specs = []
    for i in range(jobs):
        builder = (make_job(f"j{i:03d}").at(rng.uniform(0, 3000)).gpus(rng.choice([1, 1, 2, 4, 8]))
                   .work(rng.expovariate(1 / 1500)).deadline(rng.uniform(3000, 20000)))
        if rng.random() < 0.5:
            builder = builder.pool(rng.choice(["a", "b"]))
        specs.append(builder.build())
    return specs


def _run(policy: str, specs: list[JobSpec], bucketed: bool, max_time: float | None,
         monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    with monkeypatch.context() as patch:
        if not bucketed:
            patch.setattr(scheduler_module, "scans_by_bucket", lambda profile: False)
        cluster = make_cluster(nodes=4, gpus=4, pools=["a", "a", "b", "b"])
        options = {"thresholds": "500"} if policy == "tiresias" else None
        result = simulator(policy, cluster, specs, options=options, max_time=max_time).run()
    return sorted((r.job_id, r.status, r.first_start, r.finish_time, r.preemptions,
                   r.gpu_seconds, r.pending_reason) for r in result.jobs)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bucket_walk_gives_the_same_schedule(policy: str, seed: int,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    specs = _workload(seed)
    assert _run(policy, specs, True, None, monkeypatch) == _run(policy, specs, False, None,
                                                                monkeypatch)


@pytest.mark.parametrize("policy", ["tiresias", "sjf"])
def test_bucket_walk_reasons_mid_run(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Stopped mid-run, every waiting job's reason is the walk's, or (for a job the walk never
    reached in a cycle that stopped early) the true "did not fit" of its bucket, or why the walk
    stopped (``scan_bucket_reasons``, once the cycle reports it)."""
    specs = _workload(3)
    fast = _run(policy, specs, True, 2500.0, monkeypatch)
    slow = _run(policy, specs, False, 2500.0, monkeypatch)
    assert [r[:6] for r in fast] == [r[:6] for r in slow]
    waiting = [(f[6], s[6]) for f, s in zip(fast, slow, strict=True) if f[2] is None]
    assert waiting, "the workload must leave jobs waiting at the stop"
    assert all(f in (s, SMALLER, FULL_STOP, SMALLEST_FAILED) for f, s in waiting)


def test_waiting_queue_keeps_buckets_sorted_and_drops_empty_ones() -> None:
    queue = WaitingQueue(lambda job: (job.spec.submit_time, job.job_id),
                         lambda job: job.spec.num_gpus)
    jobs = [Job(make_job(f"j{i}").at(10 - i).gpus(1 + i % 2).build()) for i in range(4)]
    for job in jobs:
        queue.add(job)
    assert {b: [j.job_id for j in js] for b, (_, js) in queue.buckets().items()} == {
        1: ["j2", "j0"], 2: ["j3", "j1"]}
    queue.pop("j3")
    queue.pop("j1")
    assert list(queue.buckets()) == [1]


def test_only_profiles_the_walk_allows_scan_by_bucket() -> None:
    from dlsched.scheduling.bucket_scan import scans_by_bucket
    assert scans_by_bucket(build_policy("tiresias"))
    assert not scans_by_bucket(build_policy("fifo"))  # strict FIFO: heads of queues
    assert scans_by_bucket(build_policy("tiresias", {"promote_knob": "2"}))  # keys re-filed
