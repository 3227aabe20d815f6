"""The scheduling cycle: it reads a snapshot and returns decisions, never mutating jobs or the
core's GPU table; preemption picks lower-ranked victims only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from builders import cpu_limit, cycle_state, make_cluster, make_job, simulator

import dlsched.scheduling.scheduler as scheduler_module
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.decisions import CycleResult
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import ClusterSnapshot
from dlsched.workload.job import Job, JobSpec, JobStatus

# Two 4-GPU nodes; blocking heads, backfill, a fractional job and enough contention for
# preemptions under SRTF and Tiresias (small thresholds, promotion on).
MIXED = [
    make_job("J1").gpus(4).at(0).work(300).build(),
    make_job("J2").gpus(2).at(5).work(100).build(),
    make_job("J3").gpus(8).at(10).work(50).build(),
    make_job("J4").gpus(1).at(20).work(20).build(),
    make_job("J5").gpus(2).at(30).work(400).build(),
    make_job("J6").gpus(1).at(35).work(10).share(0.5).build(),
    make_job("J7").gpus(3).at(40).work(60).build(),
    make_job("J8").gpus(1).at(40).work(5).build(),
]
POLICIES = [
    ("fifo", {}), ("fifo", {"strict": "false"}), ("sjf", {}), ("srtf", {}), ("backfill", {}),
    ("tiresias", {"thresholds": "50:200", "promote_knob": "1"}),
]


def _fields(job: Job) -> tuple:
    values = []
    for field in dataclasses.fields(job):
        value = getattr(job, field.name)
        values.append(dict(value) if isinstance(value, dict) else value)
    return tuple(values)


@pytest.mark.parametrize(("policy", "options"), POLICIES,
                         ids=[f"{p}-{'-'.join(o.values()) or 'default'}" for p, o in POLICIES])
def test_cycle_does_not_mutate_jobs_or_gpus(policy: str, options: dict[str, str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    sim = simulator(policy, make_cluster(nodes=2, gpus=4), MIXED, options=options,
                    restart_overhead=5.0)
    decisions: list[CycleResult] = []

    def checked_cycle(profile: Profile, snapshot: ClusterSnapshot) -> CycleResult:
        jobs = sim.core.jobs.values()
        before = {job.job_id: _fields(job) for job in jobs}
        free = sim.core.free.copy()
        result = run_cycle(profile, snapshot)
        assert {job.job_id: _fields(job) for job in jobs} == before
        assert np.array_equal(sim.core.free, free)
        decisions.append(result)
        return result

    monkeypatch.setattr(scheduler_module, "run_cycle", checked_cycle)
    with cpu_limit(20):
        result = sim.run()
    assert all(r.status == "finished" for r in result.jobs)
    assert any(d.starts for d in decisions)
    if policy in ("srtf", "tiresias"):
        assert any(d.preemptions for d in decisions)


def test_snapshot_free_is_read_only() -> None:
    state = cycle_state(make_cluster())
    with pytest.raises(ValueError):
        state.snapshot.free[0] = 0.0
    state.free[0] = 0.0  # the cycle's scratch copy is writable
    assert state.snapshot.free[0] == 1.0


def test_empty_cycle_decides_nothing() -> None:
    result = run_cycle(build_policy("fifo"), cycle_state(make_cluster()).snapshot)
    assert (result.starts, result.preemptions, result.reasons) == ((), (), {})
    assert result.next_wakeup is None


def _running(spec: JobSpec, gpus: tuple[int, ...], done: float = 0.0) -> Job:
    job = Job(spec)
    job.status, job.allocation, job.shares = JobStatus.RUNNING, gpus, (1.0,) * len(gpus)
    job.rate, job.run_started, job.done_work = 1.0, 0.0, done
    return job


def test_srtf_evicts_only_lower_ranked_jobs() -> None:
    # One node, 2 GPUs, both busy at t=50. "short" has 10 s left, "long" 450 s. A 100 s newcomer
    # ranks between them: it may evict "long" only.
    short = _running(make_job("short").work(60).build(), (0,))
    long = _running(make_job("long").work(500).build(), (1,))
    new = Job(make_job("new").at(50).work(100).build())
    cluster = make_cluster(nodes=1, gpus=2)
    state = cycle_state(cluster, {0: 1.0, 1: 1.0}, waiting=[new], running=[short, long], now=50)
    result = run_cycle(build_policy("srtf"), state.snapshot)
    assert [p.job_id for p in result.preemptions] == ["long"]
    assert result.preemptions[0].reason == "preempted by new"
    assert [(s.job_id, s.gpus, s.shares) for s in result.starts] == [("new", (1,), (1.0,))]


def test_no_preemption_when_every_running_job_ranks_higher() -> None:
    short = _running(make_job("short").work(60).build(), (0,))
    new = Job(make_job("new").at(50).work(100).build())
    state = cycle_state(make_cluster(nodes=1, gpus=1), {0: 1.0}, waiting=[new], running=[short],
                        now=50)
    result = run_cycle(build_policy("srtf"), state.snapshot)
    assert result.preemptions == () and result.starts == ()
    assert "new" in result.reasons


def test_strict_fifo_gives_every_blocked_job_a_reason() -> None:
    # Only the head is tried (Kueue's heads of each queue); the queue's reason covers the rest.
    cluster = make_cluster(nodes=1, gpus=2)
    jobs = [Job(make_job(f"w{i}").gpus(g).at(i).build()) for i, g in enumerate((4, 1, 1))]
    result = run_cycle(build_policy("fifo"), cycle_state(cluster, waiting=jobs).snapshot)
    assert result.starts == ()
    assert set(result.reasons) == {"w0"}
    assert result.blocked == {"default": "waiting behind w0 (strict FIFO)"}
    assert "needs 4 GPUs, 2 free" in result.reasons["w0"]


def test_strict_fifo_heads_advance_per_queue_in_submission_order() -> None:
    # Queue a's head (4 GPUs) blocks a; queue b's jobs still start, in order, while room lasts.
    cluster = make_cluster(nodes=1, gpus=2)
    jobs = [Job(make_job("a0").gpus(4).at(0).queue("a").build()),
            Job(make_job("b0").gpus(1).at(1).queue("b").build()),
            Job(make_job("a1").gpus(1).at(2).queue("a").build()),
            Job(make_job("b1").gpus(1).at(3).queue("b").build()),
            Job(make_job("b2").gpus(1).at(4).queue("b").build())]
    result = run_cycle(build_policy("fifo"), cycle_state(cluster, waiting=jobs).snapshot)
    assert [s.job_id for s in result.starts] == ["b0", "b1"]
    assert set(result.blocked) == {"a", "b"}
