"""The shortcuts that keep a cycle cheap on 10^5-job traces decide exactly what the long way
decides: known misses, per-spec caches, per-mask sums, the event core's ``pop_at``."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job, simulator

from dlsched.policies.tiresias import DiscretizedLas
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.framework import SUCCESS, Status
from dlsched.scheduling.placement import filter_nodes, gpu_nodes, static_shape
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import ClusterSnapshot, CycleState
from dlsched.scheduling.waiting import WaitingQueue
from dlsched.sim.events import Event, EventQueue, Priority
from dlsched.workload.job import Job, JobSpec, JobStatus

SMALLER = "[placement] a job as large or smaller of the same kind did not fit in this cycle"


def _running(spec: JobSpec, gpus: tuple[int, ...], started: float = 0.0) -> Job:
    job = Job(spec)
    job.status, job.allocation, job.shares = JobStatus.RUNNING, gpus, (1.0,) * len(gpus)
    job.rate, job.run_started, job.attained_time = 1.0, started, started
    return job


class AllowAll:
    """A PreFilter that passes every job: its presence turns the known-miss shortcut off."""

    name = "allow-all"

    def pre_filter(self, state: CycleState, job: Job) -> Status:
        return SUCCESS


def _pool_cycle(with_prefilter: bool) -> tuple[list[str], dict[str, str]]:
    # Pool a (node 0) is full of jobs submitted earlier (they rank higher: no victims);
    # pool b (node 1) is free. w1 fails; w2 (same shape) and w3 (same pool, larger) are known
    # misses; w4 in pool b starts.
    cluster = make_cluster(nodes=2, gpus=2, pools=["a", "b"])
    running = [_running(make_job(f"r{i}").pool("a").build(), (i,)) for i in range(2)]
    waiting = [Job(make_job("w1").pool("a").at(10).build()),
               Job(make_job("w2").pool("a").at(11).build()),
               Job(make_job("w3").gpus(2).pool("a").at(12).build()),
               Job(make_job("w4").pool("b").at(13).build())]
    order = DiscretizedLas((3600.0,), 0.0)
    plugins = (order, AllowAll()) if with_prefilter else (order,)
    profile = Profile("tiresias", order, plugins=plugins)
    state = cycle_state(cluster, {0: 1.0, 1: 1.0}, waiting=waiting, running=running, now=20)
    result = run_cycle(profile, state.snapshot)
    return [s.job_id for s in result.starts], result.reasons


@pytest.mark.parametrize("with_prefilter", [False, True], ids=["shortcut", "long-way"])
def test_known_misses_get_the_same_reasons_as_the_long_way(with_prefilter: bool) -> None:
    starts, reasons = _pool_cycle(with_prefilter)
    assert starts == ["w4"]
    assert reasons == {"w1": "[placement] needs 1 GPU, none free on fitting nodes",
                       "w2": SMALLER, "w3": SMALLER}


def test_static_shape_groups_jobs_by_share_and_allowed_nodes() -> None:
    state = cycle_state(make_cluster(nodes=2, gpus=2, pools=["a", "b"]))
    filters = Profile("x", DiscretizedLas((1.0,), 0.0)).filters
    shapes = {name: static_shape(state, Job(spec), filters) for name, spec in [
        ("a1", make_job("a1").pool("a").build()), ("a2", make_job("a2").pool("a").at(5).build()),
        ("a-half", make_job("a3").pool("a").share(0.5).build()),
        ("b", make_job("b").pool("b").build())]}
    assert shapes["a1"] == shapes["a2"]
    assert len({shapes["a1"], shapes["a-half"], shapes["b"]}) == 3
    assert shapes["a-half"][0] == 0.5


def test_static_mask_is_per_spec_and_per_profile() -> None:
    state = cycle_state(make_cluster(nodes=2, gpus=2, pools=["a", "b"]))
    job = Job(make_job("j").pool("b").build())
    first = Profile("x", DiscretizedLas((1.0,), 0.0)).filters
    other = Profile("y", DiscretizedLas((1.0,), 0.0)).filters
    for filters in (first, other, first):
        mask, status = filter_nodes(state, job, filters)
        assert status.ok and mask.tolist() == [False, True]


def test_gpu_nodes_is_the_array_as_ints_cached_per_cluster() -> None:
    cluster = make_cluster(nodes=3, gpus=2)
    nodes = gpu_nodes(cluster)
    assert nodes == [0, 0, 1, 1, 2, 2] and all(type(n) is int for n in nodes)
    assert gpu_nodes(cluster) is nodes
    assert gpu_nodes(make_cluster(nodes=1, gpus=3)) == [0, 0, 0]


def test_snapshot_keeps_read_only_arrays_and_guards_writable_ones() -> None:
    state = cycle_state(make_cluster(nodes=1, gpus=2))
    base = state.snapshot
    frozen = np.ones(2)
    frozen.flags.writeable = False
    writable = np.ones(2)
    snapshot = ClusterSnapshot(base.cluster, 0.0, frozen, writable, base.node_version, (), (),
                               base.throughput)
    assert snapshot.free is frozen
    assert snapshot.node_free is not writable and not snapshot.node_free.flags.writeable
    writable[0] = 0  # a view: it sees the core's later changes
    assert snapshot.node_free[0] == 0


def test_waiting_queue_computes_a_static_key_once_per_job() -> None:
    calls: list[str] = []

    def key(job: Job) -> tuple[float, str]:
        calls.append(job.job_id)
        return (job.spec.submit_time, job.job_id)

    queue = WaitingQueue(key)
    jobs = [Job(make_job(f"j{i}").at(t).build()) for i, t in enumerate((3, 1, 2))]
    for job in jobs:
        queue.add(job)
    assert [j.job_id for j in queue.ordered()] == ["j1", "j2", "j0"]
    assert queue.pop("j2") is jobs[2]
    assert [j.job_id for j in queue.ordered()] == ["j1", "j0"]
    assert [j.job_id for j in queue.by_queue()["default"]] == ["j1", "j0"]
    assert calls == ["j0", "j1", "j2"]


def test_rank_epoch_sees_a_demotion_on_the_same_mask() -> None:
    # One 1-GPU job runs from t=0; its queue-0 threshold of 100 GPU-s is crossed at t=100.
    cluster = make_cluster(nodes=1, gpus=2)
    running = _running(make_job("r").build(), (0,))
    order = DiscretizedLas((100.0,), 0.0)
    waiting = Job(make_job("w").at(1).build())
    mask = np.ones(1, dtype=bool)
    epochs = []
    for now in (50.0, 99.0, 150.0):
        state = cycle_state(cluster, {0: 1.0}, waiting=[waiting], running=[running], now=now)
        epochs.append(order.rank_epoch(state, waiting, mask))
    assert epochs == [(0, 0), (0, 0), (1, 0)]


def test_pop_at_takes_only_events_due_then_and_sees_new_ones() -> None:
    queue = EventQueue()
    queue.schedule(2.0, Event(Priority.ARRIVAL, "later"))
    queue.schedule(1.0, Event(Priority.TIMER, "timer"))
    queue.schedule(1.0, Event(Priority.FINISH, "finish"))
    first = queue.pop_at(1.0)
    assert first is not None and first.payload == "finish"
    queue.schedule(1.0, Event(Priority.ARRIVAL, "same-time arrival"))  # scheduled meanwhile
    rest = [queue.pop_at(1.0), queue.pop_at(1.0), queue.pop_at(1.0)]
    assert [e.payload if e else None for e in rest] == ["same-time arrival", "timer", None]
    assert len(queue) == 1 and queue.peek() == 2.0


@pytest.mark.parametrize("enabled", [True, False], ids=["gc-on", "gc-off"])
def test_simulation_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    sim = simulator("fifo", make_cluster(), [make_job("j").work(10).build()])
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        result = sim.run()
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
    assert [r.status for r in result.jobs] == ["finished"]
