"""``JobSpec.max_per_node``: at most that many workers of a job's group (or of the job itself)
on one node, held by the resource book, placed by the framework's policies, never broken by
the allocation policies (a start that would is held back), and told when it can never fit."""

from __future__ import annotations

import collections
from collections.abc import Sequence

import numpy as np
import pytest

from dlsched.cluster.cluster import Cluster, Node
from dlsched.experiment import input_warnings
from dlsched.run_config import RunConfig
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.resources import ResourceBook
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

CLUSTER = Cluster("two", tuple(Node(f"n{i}", "V100", 4) for i in range(2)))


def _run(jobs: Sequence[JobSpec], policy: str = "fifo", cluster: Cluster = CLUSTER
         ) -> Simulator:
    sim = Simulator(cluster, Trace("t", tuple(jobs)), build_policy(policy),
                    SimConfig(restart_overhead=0))
    sim.run()
    return sim


def _nodes(sim: Simulator, cluster: Cluster = CLUSTER) -> dict[str, list[int]]:
    return {s.job_id: sorted(int(cluster.gpu_node[g]) for g in s.gpus)
            for s in sim.core.segments.all()}


@pytest.mark.parametrize("policy", ["fifo", "sjf", "tiresias", "backfill"])
def test_a_group_spreads_and_the_fifth_waits(policy: str) -> None:
    # Consolidated placement would put all four on node 0; the app may have 2 per node.
    jobs = [JobSpec(f"a{i}", 0.0, 1, 100.0 + i, group="app", max_per_node=2) for i in range(5)]
    sim = _run(jobs, policy)
    nodes = _nodes(sim)
    assert [nodes[f"a{i}"] for i in range(4)] == [[0], [0], [1], [1]]
    a4 = next(s for s in sim.core.segments.all() if s.job_id == "a4")
    assert a4.start == 100.0 and nodes["a4"] == [0]  # in a0's place once it ends
    # Without the cap the same jobs all start at 0 on node 0 (then node 1 for the fifth).
    plain = _nodes(_run([JobSpec(f"a{i}", 0.0, 1, 100.0 + i) for i in range(5)], policy))
    assert [plain[f"a{i}"] for i in range(5)] == [[0], [0], [0], [0], [1]]


def test_a_job_without_a_group_spreads_its_own_workers() -> None:
    sim = _run([JobSpec("spread", 0.0, 2, 50.0, max_per_node=1),
                JobSpec("other", 0.0, 2, 50.0, max_per_node=1)])
    assert _nodes(sim) == {"spread": [0, 1], "other": [0, 1]}  # jobs do not count together


def test_a_job_that_can_never_fit_is_told_why() -> None:
    sim = _run([JobSpec("never", 0.0, 3, 10.0, max_per_node=1)])
    record = next(iter(sim.run().jobs))
    assert record.status == "failed"
    assert "needs 3 GPUs, the nodes it may use have 2" in record.pending_reason
    assert "at most 1 worker of job:never per node" in record.pending_reason


@pytest.mark.parametrize("policy", ["gandiva", "gavel-las", "pollux", "themis"])
def test_no_policy_breaks_a_cap(policy: str) -> None:
    cluster = Cluster("six", tuple(Node(f"n{i}", "V100", 8) for i in range(6)))
    rng = np.random.default_rng(3)
    jobs = [JobSpec(f"j{i}", float(rng.uniform(0, 3000)), int(rng.choice([1, 1, 2, 4])),
                    float(rng.uniform(200, 2000)), group=str(group),
                    max_per_node={"a": 2, "b": 1}[str(group)])
            for i, group in enumerate(rng.choice(["a", "b"], 60))]
    sim = _run(jobs, policy, cluster)
    specs = {j.job_id: j for j in jobs}
    events = []
    for segment in sim.core.segments.all():
        spec = specs[segment.job_id]
        end = segment.end if segment.end is not None else float("inf")
        for gpu in segment.gpus:
            node = int(cluster.gpu_node[gpu])
            events += [(segment.start, 1, spec.group, node), (end, -1, spec.group, node)]
    held: collections.Counter = collections.Counter()
    worst: dict[str, int] = collections.defaultdict(int)
    for _, step, group, node in sorted(events, key=lambda e: (e[0], e[1])):
        held[group, node] += step
        worst[group] = max(worst[group], held[group, node])
    assert events and worst["a"] <= 2 and worst["b"] <= 1


@pytest.mark.parametrize("policy", ["gavel-fifo", "optimus", "pollux", "gandiva"])
def test_an_allocation_policys_layout_is_spread_to_keep_the_cap(policy: str) -> None:
    # Each policy puts a 2-GPU job on one node; capped at one worker per node it runs on both
    # (Optimus asks 3 workers of each: the job's own 2 are spread instead).
    jobs = [JobSpec("s", 0.0, 2, 100.0, max_per_node=1),
            JobSpec("t", 0.0, 2, 100.0, group="g", max_per_node=1),
            JobSpec("u", 0.0, 2, 100.0, group="g", max_per_node=1)]
    sim = _run(jobs, policy)
    assert all(job.status == "finished" for job in sim.run().jobs)
    assert {s.job_id for s in sim.core.segments.all()} == {"s", "t", "u"}
    assert all(sorted(int(CLUSTER.gpu_node[g]) for g in s.gpus) == [0, 1]
               for s in sim.core.segments.all())


def test_the_book_counts_each_group_per_node() -> None:
    book = ResourceBook.of(CLUSTER)
    spec = JobSpec("x", 0.0, 3, 1.0, group="app", max_per_node=2)
    assert book.workers_per_node(spec).tolist() == [2, 2]
    book.take((0, 1, 4), spec)
    assert book.groups["app"].tolist() == [2, 1]
    assert book.workers_per_node(spec).tolist() == [0, 1]
    other = JobSpec("y", 0.0, 1, 1.0, group="app", max_per_node=2)
    assert book.shortfall((2,), other) is not None and "node 0 already runs 2" in \
        book.shortfall((2,), other)
    assert book.shortfall((5,), other) is None
    copy = book.copy()
    copy.give((0, 1, 4), spec)
    assert "app" not in copy.groups and book.groups["app"].tolist() == [2, 1]


def test_a_negative_cap_is_refused() -> None:
    with pytest.raises(ValueError, match="max_per_node must be an integer >= 0"):
        JobSpec("x", 0.0, 1, 1.0, max_per_node=-1)


def test_allocation_policies_are_named_as_not_placing_by_the_cap() -> None:
    trace = Trace("t", (JobSpec("a", 0.0, 1, 1.0, group="g", max_per_node=1),))
    config = RunConfig(policies=("fifo", "gavel-las"))
    warned = [w for w in input_warnings(config, trace, CLUSTER) if "max_per_node" in w]
    assert len(warned) == 1 and warned[0].startswith("gavel-las places jobs by its own")
    assert "spread over nodes of the GPU types it chose" in warned[0]
    plain = Trace("t", (JobSpec("a", 0.0, 1, 1.0),))
    assert not [w for w in input_warnings(config, plain, CLUSTER) if "max_per_node" in w]
