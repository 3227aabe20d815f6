"""A run in which failures undo every attempt of a job before it keeps any work is refused
with the field to change (``ResilienceBook._check_progress``), not run until ``max_time``."""

from __future__ import annotations

import pytest
from builders import cluster_of

from dlsched.cluster.cluster import Node
from dlsched.errors import ConfigError
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.resilience import CrawlWarning
from dlsched.sim.checkpoint import CheckpointPlan
from dlsched.sim.failures import FailureCategory, FailureModel
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, JobStatus
from dlsched.workload.trace import Trace

# 10 failures per GPU-day, repaired in 36 s: a 4-GPU job fails every 2,160 s on average
MODEL = FailureModel("m", (FailureCategory("gpu", 10.0, 0.01),))


def _run(work: float, restart: float, interval: object, cost: float) -> Simulator:
    sim = Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                    Trace("t", (JobSpec("j", 0.0, 4, work=work),)), build_policy("fifo"),
                    SimConfig(restart_overhead=restart, seed=1, failures=MODEL,
                              checkpoint=CheckpointPlan(interval, cost), max_time=1e8))
    sim.run()
    return sim


@pytest.mark.parametrize("work, restart, interval, cost, field", [
    # 1e9 s checkpoints: Young's interval is 2e6 s, a checkpoint completes after ~1e9 s
    (1e4, 5.0, "young", 1e9, "--checkpoint-cost"),
    (1e4, 5.0, "daly", 1e9, "--checkpoint-cost"),
    (1e4, 1e6, "young", 10.0, "--restart-overhead"),  # it never gets through its restart
    (1e7, 5.0, 1e7, 10.0, "--checkpoint"),  # a fixed interval ~5,000 failures long
], ids=["young-cost", "daly-cost", "restart", "fixed-interval"])
def test_a_job_that_can_never_keep_work_is_refused_naming_the_field(
        work: float, restart: float, interval: object, cost: float, field: str) -> None:
    """Before, each of these ran until ``max_time`` (1e8 s, ~46,000 failures of the job),
    and without one, for ever."""
    with pytest.raises(ConfigError, match=rf"job j \(4 GPUs\) can never keep any work: "
                                              rf"it fails every 2.16e\+03 s.*\({field}"):
        _run(work, restart, interval, cost)


@pytest.mark.parametrize("work, restart, interval, cost", [
    (1e4, 5.0, "young", 60.0),
    (1e4, 5.0, "young", 5000.0),  # costly checkpoints, a job that still gets through
    (2e3, 5.0, "young", 0.0),  # free checkpoints: nothing lost
    (3e3, 5.0, 1e7, 10.0),  # no checkpoint in time, but it can finish between failures
], ids=["default", "costly", "free", "finishes-first"])
def test_a_job_that_can_keep_work_runs_to_its_end(work: float, restart: float,
                                                  interval: object, cost: float) -> None:
    assert _run(work, restart, interval, cost).core.jobs["j"].status is JobStatus.FINISHED


def _run_on(nodes: tuple[Node, ...], spec: JobSpec, restart: float, interval: object,
            cost: float, max_time: float = 1e8) -> Simulator:
    sim = Simulator(cluster_of(*nodes), Trace("t", (spec,)), build_policy("fifo"),
                    SimConfig(restart_overhead=restart, seed=1, failures=MODEL,
                              checkpoint=CheckpointPlan(interval, cost), max_time=max_time))
    sim.run()
    return sim


EIGHTS = (Node("n0", "V100", 8), Node("n1", "V100", 8))


def test_a_failure_of_its_node_counts_not_only_of_its_gpu() -> None:
    """A 1-GPU job on an 8-GPU node is stopped by a failure of any of the node's 8 GPUs: it
    fails every 1,080 s, not every 8,640 s. Its first checkpoint, ~30,000 s after each restart,
    is ~e^28 failures away; counted on its own GPU, ~e^3.5, and the run went on (here until
    max_time) instead of being refused."""
    with pytest.raises(ConfigError, match=r"job j \(1 GPU on 1 node of 8 GPUs\) can never keep "
                                          r"any work: it fails every 1.08e\+03 s"):
        _run_on(EIGHTS, JobSpec("j", 0.0, 1, work=1e6), 5.0, 3e4, 10.0, max_time=3e5)


def test_the_interval_rule_uses_the_mtbf_of_the_nodes_it_runs_on() -> None:
    """Young's interval ``sqrt(2 delta M)`` with ``M`` the job's MTBF: 1,080 s for a 1-GPU job
    on an 8-GPU node (was its own GPU's, 8,640 s: an interval sqrt(8) times too long)."""
    sim = _run_on(EIGHTS, JobSpec("j", 0.0, 1, work=100.0), 5.0, "young", 60.0)
    assert sim.core.resilience.of("j").interval == pytest.approx((2 * 60.0 * 1080.0) ** 0.5)


def test_a_job_that_crawls_is_warned_of_once_naming_its_slowdown_and_options() -> None:
    """Failures every 2,160 s and work kept every 15,120 s (lambda s = 7): each segment is
    expected to take (e^7 - 1) / 7 ~ 157 times its length. It gets through (no error) but
    the user is told, once, which job, by how much and what to change."""
    with pytest.warns(CrawlWarning) as caught:
        sim = _run_on((Node("n0", "V100", 4), Node("n1", "V100", 4)),
                      JobSpec("j", 0.0, 4, work=3.1e4), 0.0, 15110.0, 10.0)
    assert sim.core.jobs["j"].status is JobStatus.FINISHED
    assert len(caught) == 1
    text = str(caught[0].message)
    assert text.startswith("job j (4 GPUs) crawls: it fails every 2.16e+03 s on average and "
                           "keeps work only every 1.51e+04 s")
    assert "expected ~157x its failure-free time" in text
    for option in ("--checkpoint-cost", "--checkpoint)", "--restart-overhead", "--resilience"):
        assert option in text


def test_a_job_that_gets_through_is_not_warned_of() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", CrawlWarning)
        sim = _run_on((Node("n0", "V100", 4), Node("n1", "V100", 4)),
                      JobSpec("j", 0.0, 4, work=1e4), 5.0, "young", 60.0)
    assert sim.core.jobs["j"].status is JobStatus.FINISHED


def test_a_run_whose_nodes_are_all_lost_for_good_ends_as_stalled() -> None:
    """Repairs that never end (``repair_hours: .inf``): once both nodes are lost the 8-GPU job
    can never run again. Failures kept coming (of nodes already down: no cycle), so the run
    never ended; here it reached max_time without being found stalled."""
    lost = FailureModel("lost", (FailureCategory("gpu", 10.0, float("inf")),))
    sim = Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                    Trace("t", (JobSpec("j", 0.0, 8, work=1e7),)), build_policy("fifo"),
                    SimConfig(seed=1, failures=lost, max_time=1e7))
    result = sim.run()
    assert result.stalled_at is not None and result.stalled_at < 1e6
    assert sim.core.jobs["j"].status is JobStatus.PREEMPTED  # by the failure, never back


def test_failures_after_the_last_job_are_not_drawn_nor_counted() -> None:
    """A completion planned before a preemption stays in the heap (stale) until its time: the
    run went on drawing and counting node failures until then (here 1e6 s, ~460 failures of
    this 8-GPU cluster) after its one 1,000 s job had ended."""
    from dlsched.sim.events import Event, Priority

    sim = Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                    Trace("t", (JobSpec("j", 0.0, 4, work=1000.0),)), build_policy("fifo"),
                    SimConfig(seed=1, failures=MODEL, restart_overhead=0.0))
    sim.events.schedule(1e6, Event(Priority.FINISH, "j", -1))  # a stale completion
    result = sim.run()
    assert sim.core.jobs["j"].status is JobStatus.FINISHED
    assert sim.clock.time < 1e4
    assert sum(n for _, n in result.failures_by_category) < 10


SLOW_REPAIRS = FailureModel("slow", (FailureCategory("gpu", 10.0, 80.0),
                                     FailureCategory("software", 10.0, 40.0)))


@pytest.mark.parametrize("nodes, spares, warned", [
    (1, 0, True), (2, 0, False), (2, 1, False)], ids=["alone", "room-elsewhere", "spare"])
def test_a_wait_for_its_nodes_repair_counts_where_no_other_node_can_hold_it(
        nodes: int, spares: int, warned: bool) -> None:
    """A 4-GPU job alone on a 4-GPU node: each failure (every 1,080 s) stops it for its node's
    repair, 60 h on average (80 h and 40 h at equal rates): ~200 failures' worth of waiting
    per failure (1 + lambda W = 201) on top of Daly's 1.344x for 610 s segments: ~270x. Before
    session 34 it was not warned of (1.34x). Where the other node can hold it, or a spare
    replaces its node at once, the wait depends on the schedule and is not counted."""
    import warnings

    cluster = [Node(f"n{i}", "V100", 4) for i in range(nodes)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CrawlWarning)
        sim = Simulator(cluster_of(*cluster), Trace("t", (JobSpec("j", 0.0, 4, work=3e3),)),
                        build_policy("fifo"),
                        SimConfig(restart_overhead=0.0, seed=1, failures=SLOW_REPAIRS,
                                  checkpoint=CheckpointPlan(600.0, 10.0), hot_spares=spares,
                                  max_time=1e9))
        sim.run()
    crawls = [str(w.message) for w in caught if issubclass(w.category, CrawlWarning)]
    assert len(crawls) == int(warned)
    if warned:
        assert ("after a 0 s restart and a ~2.16e+05 s wait for its node's repair (mean "
                "repair_hours; the other nodes cannot hold it): expected ~270x") in crawls[0]
        assert "hold spare nodes (--hot-spares)" in crawls[0]
