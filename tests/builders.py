"""Test builders: jobs, clusters, cycle states and whole simulated runs in one line each.

    make_job("j1").gpus(4).at(10).work(100).queue("a").build()   -> JobSpec
    make_cluster(nodes=2, gpus=4, gpu_type="V100", nvlink=0)    -> Cluster
    run("fifo", cluster, jobs, restart_overhead=0.0)            -> {job_id: JobRecord}

``run`` defaults ``restart_overhead`` to 0 (not the simulator's 30 s) so that golden tests can be
computed by hand; tests about the overhead pass it explicitly.
"""

from __future__ import annotations

import contextlib
import random
import signal
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace

import numpy as np
import pytest

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import ClusterSnapshot, CycleState, whole_free_per_node
from dlsched.sim.result import JobRecord
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import Job, JobSpec, JobStatus
from dlsched.workload.trace import Trace


class JobBuilder:
    """A fluent ``JobSpec`` builder; defaults: submitted at 0, 1 GPU, 100 s of work."""

    def __init__(self, job_id: str) -> None:
        self._spec = JobSpec(job_id, submit_time=0.0, num_gpus=1, work=100.0)

    def _with(self, **changes: object) -> JobBuilder:
        self._spec = replace(self._spec, **changes)
        return self

    def gpus(self, count: int) -> JobBuilder:
        return self._with(num_gpus=count)

    def at(self, submit_time: float) -> JobBuilder:
        return self._with(submit_time=float(submit_time))

    def work(self, amount: float) -> JobBuilder:
        return self._with(work=float(amount))

    def queue(self, name: str) -> JobBuilder:
        return self._with(queue=name)

    def share(self, fraction: float) -> JobBuilder:
        return self._with(gpu_share=fraction)

    def types(self, *names: str) -> JobBuilder:
        return self._with(gpu_types=tuple(names))

    def pool(self, name: str) -> JobBuilder:
        return self._with(pool=name)

    def priority(self, value: int) -> JobBuilder:
        return self._with(priority=value)

    def deadline(self, at: float) -> JobBuilder:
        return self._with(deadline=float(at))

    def elastic(self, min_gpus: int, max_gpus: int) -> JobBuilder:
        return self._with(min_gpus=min_gpus, max_gpus=max_gpus)

    def build(self) -> JobSpec:
        return self._spec


class FixedTargets:
    """An allocation policy that returns the same targets every round (allocation cycle and
    tenant gate tests)."""

    name = "fixed"

    def __init__(self, targets: Mapping[str, Sequence[int]]) -> None:
        from dlsched.scheduling.allocation import Assignment

        self.targets = {j: Assignment(tuple(nodes)) for j, nodes in targets.items()}

    def allocate(self, state: object) -> Mapping[str, object]:
        return self.targets


class NullExecutor:
    """An executor for a core driven by hand: accepts every start and stop, runs nothing."""

    def start(self, job: Job, now: float) -> None:
        pass

    def stop(self, job: Job, now: float) -> None:
        pass


def make_job(job_id: str) -> JobBuilder:
    return JobBuilder(job_id)


def make_cluster(nodes: int = 1, gpus: int = 4, gpu_type: str = "V100", nvlink: int = 0,
                 racks: int = 1, pools: Sequence[str] | None = None,
                 name: str = "test") -> Cluster:
    """``nodes`` identical nodes, split into ``racks`` contiguous racks; ``pools[i]`` is node
    i's pool when given."""
    per_rack = -(-nodes // racks)
    return Cluster(name, tuple(
        Node(f"n{i}", gpu_type, gpus, rack=f"rack-{i // per_rack}", nvlink_domain=nvlink,
             pool=pools[i] if pools else None)
        for i in range(nodes)))


def cluster_of(*nodes: Node, name: str = "test") -> Cluster:
    """A cluster of hand-made nodes (mixed GPU types, racks or pools)."""
    return Cluster(name, tuple(nodes))


def cycle_state(cluster: Cluster, used: Mapping[int, float] | None = None,
                waiting: Iterable[Job] = (), running: Iterable[Job] = (),
                now: float = 0.0) -> CycleState:
    """A fresh cycle scratchpad; ``used[g]`` is the share of GPU g already taken."""
    free = np.ones(cluster.num_gpus)
    for gpu, share in (used or {}).items():
        free[gpu] -= share
    snapshot = ClusterSnapshot(cluster=cluster, now=now, free=free,
                               node_free=whole_free_per_node(cluster, free),
                               node_version=np.zeros(cluster.num_nodes, dtype=np.int64),
                               running=tuple(running), waiting=tuple(waiting),
                               throughput=LinearScaling())
    return CycleState.begin(snapshot)


def simulator(policy: str, cluster: Cluster, jobs: Iterable[JobSpec], *,
              options: Mapping[str, object] | None = None, placement: str | None = None,
              **sim_options: object) -> Simulator:
    """A ready-to-run simulator over ``jobs`` with a fresh profile (plugins keep state)."""
    sim_options.setdefault("restart_overhead", 0.0)
    profile = build_policy(policy, options, placement)  # type: ignore[arg-type]
    trace = Trace("test", tuple(jobs))
    return Simulator(cluster, trace, profile, SimConfig(**sim_options))  # type: ignore[arg-type]


def run(policy: str, cluster: Cluster, jobs: Iterable[JobSpec], *,
        options: Mapping[str, object] | None = None, placement: str | None = None,
        **sim_options: object) -> dict[str, JobRecord]:
    return records_of(simulator(policy, cluster, jobs, options=options, placement=placement,
                                **sim_options))


def schedule_and_cycles(sim: Simulator) -> tuple[tuple, int]:
    """Run ``sim``: (what two runs that should schedule alike are compared on: records, timeline
    and segments) and its cycle count, for tests that a skipped wake-up changes nothing."""
    result = sim.run()
    records = sorted((r.job_id, r.first_start, r.finish_time, r.preemptions, r.gpu_seconds)
                     for r in result.jobs)
    timeline = result.timeline
    return (records, list(timeline.times), list(timeline.used_gpus), list(timeline.waiting),
            sim.core.segments.all()), result.cycles


def running_job(job_id: str, gpus: tuple[int, ...], elastic: tuple[int, int] | None = None
                ) -> Job:
    """A job running on ``gpus`` (whole), elastic within ``elastic`` if given."""
    builder = make_job(job_id).gpus(len(gpus))
    job = Job((builder.elastic(*elastic) if elastic else builder).build())
    job.set_status(JobStatus.RUNNING)
    job.allocation, job.shares = gpus, (1.0,) * len(gpus)
    return job


def snapshot_of(cluster: Cluster, running: list[Job], waiting: list[Job]) -> ClusterSnapshot:
    """A snapshot where ``running`` hold their GPUs whole and ``waiting`` wait."""
    used = {g: 1.0 for job in running for g in job.allocation}
    return cycle_state(cluster, used, waiting=waiting, running=running).snapshot


def random_preemptive_jobs(seed: int, with_deadlines: bool = False) -> list[JobSpec]:
    """120 jobs of 1-4 GPUs arriving over 2,000 s with exponential work (mean 800 s), and
    deadlines when asked: enough contention on 2 x 4 GPUs for a preemptive policy to preempt."""
    rng = random.Random(seed)
    jobs = []
    for i in range(120):
        job = (make_job(f"j{i:03d}").at(rng.uniform(0, 2000)).gpus(rng.choice([1, 1, 2, 4]))
               .work(rng.expovariate(1 / 800)))
        if with_deadlines:
            job = job.deadline(rng.uniform(500, 9000))
        jobs.append(job.build())
    return jobs


def preemption_outline(policy: str, jobs: Iterable[JobSpec],
                       options: Mapping[str, object]) -> list[tuple]:
    """(job, first start, finish, preemptions) of every job of a run on 2 x 4 GPUs, by job
    id: what two runs that should make the same schedule are compared on."""
    got = run(policy, make_cluster(nodes=2, gpus=4), jobs, options=options)
    return sorted((r.job_id, r.first_start, r.finish_time, r.preemptions) for r in got.values())


CYCLES = 200_000  # scheduling cycles a test run may take; no test trace comes near it
CPU_SECONDS = 60.0  # backstop against a hang inside one cycle


def records_of(sim: Simulator, cycles: int = CYCLES,
               cpu_seconds: float = CPU_SECONDS) -> dict[str, JobRecord]:
    """Run ``sim`` to the end; a run that takes over ``cycles`` cycles or ``cpu_seconds`` of
    CPU fails instead of hanging. Never wall time: a loaded machine must not fail a test."""
    with cycle_limit(sim, cycles), cpu_limit(cpu_seconds):
        result = sim.run()
    return {record.job_id: record for record in result.jobs}


class TooManyCycles(RuntimeError):
    """A simulation ran more cycles than its test allows (it does not end)."""


@contextlib.contextmanager
def cycle_limit(sim: Simulator, cycles: int) -> Iterator[None]:
    """Raise TooManyCycles from the cycle after the first ``cycles`` of ``sim``: a bound
    that depends only on the run, so a test that hits it fails the same way everywhere."""
    core = sim.core
    cycle = core.cycle

    def counted():  # noqa: ANN202
        if core.cycles >= cycles:
            raise TooManyCycles(f"the simulation did not end within {cycles} cycles "
                                f"(simulated time {sim.clock.now():g} s)")
        return cycle()

    core.cycle = counted  # type: ignore[method-assign]
    try:
        yield
    finally:
        core.cycle = cycle  # type: ignore[method-assign]


@contextlib.contextmanager
def cpu_limit(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the block after ``seconds`` of this process's CPU time (where
    SIGPROF exists). CPU time, not wall time: other processes on the machine do not count."""
    in_main = threading.current_thread() is threading.main_thread()
    if not hasattr(signal, "setitimer") or not in_main:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise TimeoutError(f"the simulation did not end within {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


Row = tuple[str, float, float, float]
"""A golden-table row: job id, first start, finish, JCT."""


def assert_schedule(records: Mapping[str, JobRecord], table: Sequence[Row]) -> None:
    """Every job of ``table`` started, finished and took as long as the table says."""
    assert sorted(records) == sorted(row[0] for row in table)
    for job_id, start, finish, jct in table:
        record = records[job_id]
        assert record.status == "finished", job_id
        got = (record.first_start, record.finish_time, record.jct)
        assert got == pytest.approx((start, finish, jct)), job_id
