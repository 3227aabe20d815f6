"""The shortcuts that keep a cycle cheap on 10^5-job traces decide exactly what the long way
decides: known misses, per-spec caches, per-mask sums, the event core's ``pop_at``."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job, simulator
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.policies.tiresias import DiscretizedLas
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.framework import SUCCESS, Status
from dlsched.scheduling.placement import filter_nodes, gpu_nodes, pick_gpus, static_shape
from dlsched.scheduling.plugins.scores import Consolidated
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


@pytest.mark.parametrize(("gpus", "crossed_at"), [((0,), 100.0), ((0, 1), 50.0)],
                         ids=["one-gpu", "two-gpus-one-node"])
def test_rank_epoch_sees_a_demotion_on_the_same_mask(gpus: tuple[int, ...],
                                                     crossed_at: float) -> None:
    # A job runs from t=0 on ``gpus`` of node 0; its queue-0 threshold of 100 GPU-s is crossed
    # at 100 / len(gpus). A demotion counts once per node it touches, whatever its GPUs there.
    cluster = make_cluster(nodes=2, gpus=2)
    running = _running(make_job("r").gpus(len(gpus)).build(), gpus)
    order = DiscretizedLas((100.0,), 0.0)
    waiting = Job(make_job("w").at(1).build())
    mask = np.ones(2, dtype=bool)
    epochs = []
    for now in (crossed_at / 2, crossed_at - 1, crossed_at + 50):
        state = cycle_state(cluster, dict.fromkeys(gpus, 1.0), waiting=[waiting],
                            running=[running], now=now)
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


def _tightest(capacity: list[int], mask: list[bool]) -> int | None:
    """The rule ``Consolidated.best_single`` shortcuts, the long way."""
    fits = [(c, n) for n, (c, m) in enumerate(zip(capacity, mask, strict=True)) if m and c > 0]
    return min(fits)[1] if fits else None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.booleans()), min_size=1, max_size=12),
       st.booleans(), st.booleans())
def test_best_single_is_the_tightest_fitting_node(nodes: list[tuple[int, bool]],
                                                  read_only: bool, as_float: bool) -> None:
    capacity = [c for c, _ in nodes]
    mask = np.array([m for _, m in nodes], dtype=bool)
    mask.flags.writeable = not read_only
    array = np.array(capacity, dtype=np.float64 if as_float else np.int64)
    assert Consolidated().best_single(array, mask) == _tightest(capacity, mask.tolist())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.booleans()), min_size=1, max_size=12),
       st.integers(1, 9), st.booleans(), st.booleans())
def test_best_fitting_is_the_tightest_node_fitting_all(nodes: list[tuple[int, bool]], need: int,
                                                       read_only: bool, as_float: bool) -> None:
    capacity = [c for c, _ in nodes]
    mask = np.array([m for _, m in nodes], dtype=bool)
    mask.flags.writeable = not read_only
    array = np.array(capacity, dtype=np.float64 if as_float else np.int64)
    fits = [(c, n) for n, (c, m) in enumerate(nodes) if m and c >= need]
    for _ in range(2):  # a read-only mask's offsets are cached: the second call reads them
        assert Consolidated().best_fitting(array, mask, need) == (min(fits)[1] if fits
                                                                  else None)


BEST_SINGLE = [  # capacity, mask, best
    ("tightest wins", [3, 1, 2], [True, True, True], 1),
    ("full node skipped", [0, 2, 1], [True, True, True], 2),
    ("outside the mask skipped", [1, 4, 2], [False, True, True], 2),
    ("tie goes to the lowest index", [2, 2, 2], [True, True, True], 0),
    ("nothing fits", [0, 5, 0], [True, False, True], None),
]


@pytest.mark.parametrize(("capacity", "mask", "best"), [c[1:] for c in BEST_SINGLE],
                         ids=[c[0] for c in BEST_SINGLE])
def test_best_single_golden(capacity: list[int], mask: list[bool], best: int | None) -> None:
    frozen = np.array(mask)
    frozen.flags.writeable = False
    for _ in range(2):  # the second call reads the cached offsets of the read-only mask
        assert Consolidated().best_single(np.array(capacity), frozen) == best


@pytest.mark.parametrize("read_first", [True, False], ids=["read-before", "read-after"])
def test_free_whole_follows_takes_evictions_and_give_backs(read_first: bool) -> None:
    # Two 2-GPU nodes, GPU 1 half used: 3 whole GPUs free.
    state = cycle_state(make_cluster(nodes=2, gpus=2), {1: 0.5})
    if read_first:
        assert state.free_whole == 3
    state.take([0, 2], 1.0)       # 1 left (GPU 3)
    state.take([1], 0.5)          # GPU 1 was not whole: still 1
    assert state.free_whole == 1
    state.give_back([0], [1.0])   # 2
    state.give_back([1], [0.25])  # GPU 1 at 0.25: not whole
    assert state.free_whole == 2
    state.evict(_running(make_job("r").gpus(2).build(), (2, 1)))  # whole shares: both whole
    assert state.free_whole == 4 == int(state.node_free.sum())
    assert state.node_free.tolist() == [2, 2]


PICKS = [  # used GPUs of a plain 4-GPU node, count, expected
    ("first free", {0: 1.0}, 1, [1]),
    ("lowest free ones", {0: 1.0, 2: 1.0}, 2, [1, 3]),
    ("a part-used GPU is not free", {0: 0.5, 1: 1.0}, 1, [2]),
    ("last one", {0: 1.0, 1: 1.0, 2: 1.0}, 1, [3]),
]


@pytest.mark.parametrize(("used", "count", "expected"), [c[1:] for c in PICKS],
                         ids=[c[0] for c in PICKS])
def test_pick_gpus_takes_the_lowest_free_gpus(used: dict[int, float], count: int,
                                              expected: list[int]) -> None:
    state = cycle_state(make_cluster(nodes=2, gpus=4), used)
    assert pick_gpus(state, 0, count, 1.0) == expected
    assert pick_gpus(state, 1, count, 1.0) == [4 + g for g in range(count)]


def test_arrivals_come_from_the_trace_in_same_time_order() -> None:
    # One GPU, FIFO. A (10 s) at 0; B and C at 10, when A ends; D at 25. B starts at 10 (the
    # completion first, then both arrivals, then one cycle); C at 20; D waits for C until 30.
    jobs = [make_job("A").work(10).build(), make_job("B").at(10).work(10).build(),
            make_job("C").at(10).work(10).build(), make_job("D").at(25).work(5).build()]
    sim = simulator("fifo", make_cluster(nodes=1, gpus=1), jobs)
    scheduled: list[Priority] = []
    schedule, cycle = sim.events.schedule, sim.core.cycle
    cycles: list[tuple[float, int]] = []

    def log_schedule(time: float, event: Event) -> None:
        scheduled.append(event.kind)
        schedule(time, event)

    def log_cycle():  # noqa: ANN202
        cycles.append((sim.clock.now(), len(sim.core.waiting)))
        return cycle()

    sim.events.schedule, sim.core.cycle = log_schedule, log_cycle
    result = sim.run()
    starts = {r.job_id: (r.first_start, r.finish_time) for r in result.jobs}
    assert starts == {"A": (0, 10), "B": (10, 20), "C": (20, 30), "D": (30, 35)}
    assert cycles == [(0, 1), (10, 2), (20, 1), (25, 1), (30, 1), (35, 0)]
    assert Priority.ARRIVAL not in scheduled  # arrivals never enter the heap


def test_max_time_stops_before_later_arrivals() -> None:
    jobs = [make_job("A").work(10).build(), make_job("B").at(50).work(10).build()]
    sim = simulator("fifo", make_cluster(nodes=1, gpus=1), jobs, max_time=20)
    result = sim.run()
    assert [r.status for r in result.jobs] == ["finished"]
    assert sim.clock.now() == 20


def test_pop_at_before_a_priority_leaves_later_kinds() -> None:
    queue = EventQueue()
    for kind in (Priority.TIMER, Priority.FINISH, Priority.ARRIVAL):
        queue.schedule(1.0, Event(kind, kind.name))
    first = queue.pop_at(1.0, Priority.ARRIVAL)
    assert first is not None and first.payload == "FINISH"
    assert queue.pop_at(1.0, Priority.ARRIVAL) is None
    assert [queue.pop_at(1.0).payload for _ in range(2)] == ["ARRIVAL", "TIMER"]  # type: ignore[union-attr]


def _thrashing_trace(seed: int, count: int = 60) -> list[JobSpec]:
    """Jobs of 1-8 GPUs on a 2 x 4-GPU cluster, long enough to be demoted, promoted again and
    preempted many times under Tiresias with a small threshold and promotion."""
    rng = np.random.default_rng(seed)
    sizes = rng.choice([1, 1, 1, 2, 2, 4, 8], size=count)
    return [make_job(f"J{i:03d}").gpus(int(size)).at(float(i * 7)).work(
        float(rng.integers(20, 400))).build() for i, size in enumerate(sizes)]


def _run_counting(seed: int, shortcut: bool) -> tuple[dict, dict[str, str], int]:
    sim = simulator("tiresias", make_cluster(nodes=2, gpus=4), _thrashing_trace(seed),
                    options={"thresholds": "40", "promote_knob": "1"}, restart_overhead=2.0)
    profile = sim.core.profile
    if not shortcut:
        profile.no_victims = None
    plugin, searches = profile.post_filters[0], [0]
    search = plugin.post_filter

    def counted(state: CycleState, job: Job, *room: int) -> object:
        searches[0] += 1
        return search(state, job, *room)

    plugin.post_filter = counted
    reasons: dict[str, str] = {}
    note = sim.core.note_reasons

    def noted(told: dict[str, str]) -> None:
        reasons.update(told)
        note(told)

    sim.core.note_reasons = noted  # type: ignore[method-assign]
    records = {r.job_id: r for r in sim.run().jobs}
    return records, reasons, searches[0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_victimless_jobs_fail_by_the_counts_without_a_search(seed: int) -> None:
    """After an eviction, a job of Tiresias' last queue (no lower queue to preempt) that does
    not fit by the free counts fails without a victim search, with the same reason and the
    same schedule as the long way (``profile.no_victims`` None)."""
    records, reasons, searches = _run_counting(seed, shortcut=True)
    long_records, long_reasons, long_searches = _run_counting(seed, shortcut=False)
    assert records == long_records
    assert reasons == long_reasons
    assert sum(r.preemptions for r in records.values()) > 20
    assert searches < long_searches
