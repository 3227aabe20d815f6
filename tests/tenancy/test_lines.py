"""The lazy admission order (``TenantAdmission.ordered``, ``tenancy/lines.py``) equals sorting
every waiting job by ``sort_key``, across cycles with arrivals, starts, finishes and preemptions,
for a static (FIFO) and a dynamic (Tiresias) policy inside the tenant model; the lines kept
across cycles equal a rebuild."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest
import yaml
from builders import NullExecutor

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import fifo
from dlsched.policies.tiresias import tiresias
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.scheduler import Scheduler
from dlsched.scheduling.state import CycleState
from dlsched.sim.clock import SimClock
from dlsched.tenancy.lines import WaitingLines
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.tenancy.quota import request_of
from dlsched.tenancy.skip import least_requests
from dlsched.workload.job import Job, JobSpec


def _config(queues: int) -> str:
    doc = {"flavors": [{"name": "any"}],
           "cluster_queues": [{"name": f"q{i}", "cohort": "all",
                               "quotas": {"any": {"gpu": 4}},
                               "preemption": {"reclaim_within_cohort": "any"}}
                              for i in range(queues)],
           "local_queues": [{"name": "team-x", "cluster_queue": "q0"}]}
    return yaml.safe_dump(doc, sort_keys=False)


def _core(policy: Profile, seed: int) -> tuple[Scheduler, SimClock, random.Random]:
    cluster = Cluster("t", tuple(Node(f"n{i}", "V100", 4) for i in range(4)))
    clock = SimClock()
    profile = with_tenants(policy, parse_tenants(_config(5)))
    core = Scheduler(cluster, profile, LinearScaling(), clock, NullExecutor())
    return core, clock, random.Random(seed)


def _full_sort(plugin: TenantAdmission, core: Scheduler) -> list[str]:
    state = CycleState.begin(core.snapshot())
    return [j.job_id for j in sorted(state.snapshot.waiting,
                                     key=lambda j: plugin.sort_key(state, j))]


@pytest.mark.parametrize("policy", [lambda: fifo(strict=False), tiresias],
                         ids=["fifo", "tiresias"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_lazy_order_equals_the_full_sort_over_many_cycles(
        policy: Callable[[], Profile], seed: int) -> None:
    core, clock, rng = _core(policy(), seed)  # a fresh policy: plugins keep state
    plugin = core.profile.queue_sort
    assert isinstance(plugin, TenantAdmission)
    count = 0
    for step in range(40):
        clock.time = step * 50.0
        for _ in range(rng.randint(0, 6)):
            queue = rng.choice(["q0", "q1", "q2", "q3", "q4", "team-x", "nowhere"])
            core.submit(JobSpec(f"j{count}", clock.time, rng.choice((1, 1, 2, 4)),
                                rng.uniform(100, 3000), queue=queue,
                                priority=rng.choice((0, 0, 1))))
            count += 1
        for job_id in [j for j in core.running if rng.random() < 0.2]:
            core.finish(job_id)
        want = _full_sort(plugin, core)
        state = CycleState.begin(core.snapshot())
        assert [j.job_id for j in plugin.ordered(state)] == want, step
        core.cycle()


def test_lines_kept_across_updates_equal_a_rebuild() -> None:
    rng = random.Random(3)
    queue_of = lambda job: job.spec.queue  # noqa: E731
    kept = WaitingLines(queue_of, lambda j: request_of(j.spec), static=True)
    waiting: dict[str, Job] = {}
    for step in range(80):
        for job_id in rng.sample(sorted(waiting), k=min(len(waiting), rng.randint(0, 3))):
            del waiting[job_id]
        for i in range(rng.randint(0, 3)):
            job_id = f"j{step}-{i}"
            waiting[job_id] = Job(JobSpec(job_id, rng.uniform(0, 100), rng.choice((1, 2, 4)),
                                          10.0, queue=rng.choice("abc"),
                                          priority=rng.choice((0, 1))))
        jobs = list(waiting.values())
        rng.shuffle(jobs)
        key = lambda j: (j.spec.submit_time, j.job_id)  # noqa: E731
        kept.update(jobs, key)
        fresh = WaitingLines(queue_of, lambda j: request_of(j.spec), static=False)
        fresh.update(jobs, key)
        assert ({q: [j.job_id for j in line] for q, line in kept.lines.items()}
                == {q: [j.job_id for j in line] for q, line in fresh.lines.items()}), step
        assert dict(kept.positions) == dict(fresh.positions)
        assert kept.least == least_requests(jobs, queue_of, lambda j: request_of(j.spec))
        for job in jobs:
            queue, position = kept.positions[job.job_id]
            assert kept.lines[queue][position] is job


def test_told_changes_and_an_untold_leave_equal_a_rebuild() -> None:
    """Joins told by the core (``joined``) and starts told by Reserve (``left``) are applied
    by bisection; a job that left untold (cancelled) beside them still leaves the lines."""
    rng = random.Random(5)
    queue_of = lambda job: job.spec.queue  # noqa: E731
    key = lambda j: (j.spec.submit_time, j.job_id)  # noqa: E731
    kept = WaitingLines(queue_of, lambda j: request_of(j.spec), static=True)
    waiting: dict[str, Job] = {}
    for step in range(60):
        for job_id in rng.sample(sorted(waiting), k=min(len(waiting), rng.randint(0, 3))):
            del waiting[job_id]
            if rng.random() < 0.8:  # started (told); else cancelled (untold)
                kept.left(job_id)
        for i in range(rng.randint(0, 3)):
            job = Job(JobSpec(f"j{step}-{i}", rng.uniform(0, 100), rng.choice((1, 2, 4)), 10.0,
                              queue=rng.choice("abc"), priority=rng.choice((0, 1))))
            waiting[job.job_id] = job
            kept.joined(job)
        jobs = list(waiting.values())
        kept.update(jobs, key)
        fresh = WaitingLines(queue_of, lambda j: request_of(j.spec), static=False)
        fresh.update(jobs, key)
        assert ({q: [j.job_id for j in line] for q, line in kept.lines.items()}
                == {q: [j.job_id for j in line] for q, line in fresh.lines.items()}), step
        assert dict(kept.positions) == dict(fresh.positions)
