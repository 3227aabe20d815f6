"""Hot spares are held per node pool (``sim/spares.py``): a failed node is replaced by a spare
of its own pool. They were one list, the cluster's last ``--hot-spares`` nodes: a failed
pool-a node's job moved onto pool b's spare, outside its pool, and the repaired pool-a node
became the spare, leaving pool a a node short for good."""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import cluster_of, make_job

from dlsched.cluster.cluster import Node
from dlsched.errors import ConfigError
from dlsched.report.metrics import failure_fields
from dlsched.scheduling.registry import build_policy
from dlsched.sim.failures import Failure, FailureCategory, FailureModel
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.trace import Trace

QUIET = FailureModel("none", (FailureCategory("gpu", 0.0, 0.0),))
# pool a: nodes 0, 1; pool b: nodes 2, 3 (8 GPUs each); one spare per pool: nodes 1 and 3
POOLS = cluster_of(*(Node(f"a{i}", "A100", 8, pool="a") for i in range(2)),
                   *(Node(f"b{i}", "A100", 8, pool="b") for i in range(2)))
POOL_A = set(range(16))
REPAIR = 5_000.0


def run(failures: list[Failure], spares: int = 1) -> Simulator:
    job = make_job("j0").gpus(8).work(20_000).pool("a").build()
    sim = Simulator(POOLS, Trace("t", (job,)), build_policy("fifo"),
                    SimConfig(restart_overhead=60.0, failures=QUIET, hot_spares=spares))
    assert sim.failures is not None
    for failure in failures:
        sim.failures.inject(failure)
    sim.run()
    return sim


def test_a_failed_node_is_replaced_by_a_spare_of_its_pool() -> None:
    """Was: the job moved onto b1 (GPUs 24-31) at 1,000 s; a0, repaired, became the only
    spare, so pool a kept one node and pool b two."""
    sim = run([Failure(1_000.0, 0, "gpu", REPAIR)])
    segments = [(s.start, s.gpus) for s in sim.core.segments.all()]
    assert segments == [(0.0, tuple(range(8))), (1_000.0, tuple(range(8, 16)))]
    assert sim.failures is not None
    assert sim.failures.spares.held == {"a": [0], "b": [3]}  # a0 repaired into pool a's
    assert sim.core.down_nodes == frozenset({0, 3})


def test_a_failure_with_no_spare_left_in_its_pool_is_counted() -> None:
    """a0 fails (a1 takes its place), then a1 before a0's repair: pool a has no spare left,
    pool b's is not taken. Repaired at 6,000 s, a0 goes to the job that waits for want of a
    spare: it restarts on a0 at once; a1, repaired at 7,000 s, refills pool a's spare. Was:
    a0 refilled the spare first and the job waited for a1's repair, 7,000 s."""
    sim = run([Failure(1_000.0, 0, "gpu", REPAIR), Failure(2_000.0, 1, "gpu", REPAIR)])
    gpus = {g for s in sim.core.segments.all() for g in s.gpus}
    assert gpus <= POOL_A
    assert sim.failures is not None
    assert sim.failures.spares.shortfall_counts() == (("a", 1),)
    starts = [(s.start, s.gpus[0]) for s in sim.core.segments.all()]
    assert starts == [(0.0, 0), (1_000.0, 8), (1_000.0 + REPAIR, 0)]
    assert sim.failures.spares.held == {"a": [1], "b": [3]}


def test_a_job_that_restarted_elsewhere_is_owed_no_node() -> None:
    """Pool a of three nodes, a2 its spare: a0 fails (the job moves to a2), then a2 (no spare
    left): the job restarts at once on a1, free. a0's repair then refills the spare."""
    three = cluster_of(*(Node(f"a{i}", "A100", 8, pool="a") for i in range(3)))
    job = make_job("j0").gpus(8).work(20_000).pool("a").build()
    sim = Simulator(three, Trace("t", (job,)), build_policy("fifo"),
                    SimConfig(restart_overhead=60.0, failures=QUIET, hot_spares=1))
    assert sim.failures is not None
    for failure in (Failure(1_000.0, 0, "gpu", REPAIR), Failure(2_000.0, 2, "gpu", REPAIR)):
        sim.failures.inject(failure)
    sim.run()
    starts = [(s.start, s.gpus[0]) for s in sim.core.segments.all()]
    assert starts == [(0.0, 0), (1_000.0, 16), (2_000.0, 8)]
    assert sim.failures.spares.held == {"a": [0]}


def test_the_summary_reports_failures_without_a_spare() -> None:
    job = make_job("j0").gpus(8).work(20_000).pool("a").build()
    sim = Simulator(POOLS, Trace("t", (job,)), build_policy("fifo"),
                    SimConfig(restart_overhead=60.0, failures=QUIET, hot_spares=1))
    assert sim.failures is not None
    for failure in (Failure(1_000.0, 0, "gpu", REPAIR), Failure(2_000.0, 1, "gpu", REPAIR)):
        sim.failures.inject(failure)
    result = sim.run()
    assert result.failures_without_spare == (("a", 1),)
    assert failure_fields(result)["failures_without_spare"] == 1


@pytest.mark.parametrize("spares", [2, 3])
def test_a_pool_too_small_for_its_spares_is_a_config_error(spares: int) -> None:
    job = make_job("j0").gpus(8).work(20_000).pool("a").build()
    with pytest.raises(ConfigError, match=rf"--hot-spares {spares}: spares are held in each "
                                          r"pool, and pool a of cluster test has 2 nodes"):
        Simulator(POOLS, Trace("t", (job,)), build_policy("fifo"),
                  SimConfig(failures=QUIET, hot_spares=spares))


def _moved_to(nodes: tuple[Node, ...], job_types: tuple[str, ...], spares: int) -> Simulator:
    job = make_job("j0").gpus(8).work(20_000).build()
    job = replace(job, gpu_types=job_types)
    sim = Simulator(cluster_of(*nodes), Trace("t", (job,)), build_policy("fifo"),
                    SimConfig(restart_overhead=60.0, failures=QUIET, hot_spares=spares))
    assert sim.failures is not None
    sim.failures.inject(Failure(1_000.0, 0, "gpu", REPAIR))
    sim.run()
    return sim


def test_a_cpu_only_node_is_never_held_as_a_spare() -> None:
    """The cluster's last node is CPU-only: it was held as the spare (a failure, drawn by
    GPUs, never hits it, and a failed GPU node's job cannot move there); now g1 is."""
    from dlsched.sim.spares import HotSpares

    nodes = (Node("g0", "A100", 8), Node("g1", "A100", 8), Node("cpu", "A100", 0, cpus=64))
    assert HotSpares(cluster_of(*nodes), 1).held == {None: [1]}


def test_the_spare_taken_is_one_the_jobs_workers_fit_on() -> None:
    """Spares b0 (A100) and v1 (V100); an A100 job's node fails: it took the last, v1, and
    went back to the queue; now b0."""
    nodes = (Node("a0", "A100", 8), Node("v0", "V100", 8), Node("b0", "A100", 8),
             Node("v1", "V100", 8))
    sim = _moved_to(nodes, ("A100",), 2)
    assert [(s.start, s.gpus[0]) for s in sim.core.segments.all()] == [(0.0, 0), (1_000.0, 16)]
