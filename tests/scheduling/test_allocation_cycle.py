"""The allocation cycle: targets become starts, resizes and preemptions; bad targets fail."""

from __future__ import annotations

import pytest
from builders import FixedTargets, make_cluster, make_job, running_job, snapshot_of

from dlsched.cluster.cluster import Cluster
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.allocation_cycle import AllocationError, run_allocation_cycle
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


def _running(job_id: str, gpus: tuple[int, ...], lo: int = 1, hi: int = 8) -> Job:
    return running_job(job_id, gpus, (lo, hi))


_snapshot = snapshot_of


# Two nodes of 4 GPUs (0-3, 4-7). A holds 0,1 and grows to 3 workers on node 0: it keeps 0,1
# and adds 2. B holds 4 and loses its target: preempted. C waits and gets 2 workers on node 1:
# B's freed GPU 4 and GPU 5. D holds 6,7 with an unchanged target: untouched.
def test_targets_become_decisions() -> None:
    cluster = make_cluster(nodes=2, gpus=4)
    a, b, d = _running("A", (0, 1)), _running("B", (4,)), _running("D", (6, 7))
    c = Job(make_job("C").gpus(2).elastic(1, 4).build())
    allocator = FixedTargets({"A": (0, 0, 0), "C": (1, 1), "D": (1, 1)})
    result = run_allocation_cycle(allocator, _snapshot(cluster, [a, b, d], [c]))
    assert [(p.job_id) for p in result.preemptions] == ["B"]
    assert [(r.job_id, r.gpus) for r in result.resizes] == [("A", (0, 1, 2))]
    assert [(s.job_id, s.gpus) for s in result.starts] == [("C", (4, 5))]


def test_waiting_job_without_target_gets_a_reason() -> None:
    cluster = make_cluster(nodes=1, gpus=4)
    waiting = Job(make_job("W").build())
    result = run_allocation_cycle(FixedTargets({}), _snapshot(cluster, [], [waiting]))
    assert not result.starts and "no GPUs" in result.reasons["W"]


# A moving job hands its GPUs over in the same cycle: A moves from node 0 to node 1 while B
# takes A's old GPUs on node 0.
def test_swap_in_one_cycle() -> None:
    cluster = make_cluster(nodes=2, gpus=2)
    a = _running("A", (0, 1))
    b = Job(make_job("B").gpus(2).build())
    result = run_allocation_cycle(FixedTargets({"A": (1, 1), "B": (0, 0)}),
                                  _snapshot(cluster, [a], [b]))
    assert [(r.job_id, r.gpus) for r in result.resizes] == [("A", (2, 3))]
    assert [(s.job_id, s.gpus) for s in result.starts] == [("B", (0, 1))]


@pytest.mark.parametrize(("targets", "message"), [
    ({"R": (0,)}, "may run with 2..2"),     # a rigid job gets its size or nothing
    ({"E": (0,) * 5}, "may run with 1..4"),  # above an elastic job's bound
    ({"X": (0,)}, "not active"),
    # Z keeps GPU 0, so node 0 has 3 free GPUs for the 4 workers of E and R.
    ({"Z": (0,), "E": (0, 0), "R": (0, 0)}, "1 more GPU"),
], ids=["rigid-wrong-size", "above-max", "unknown-job", "overfull-node"])
def test_bad_targets_fail(targets: dict[str, tuple[int, ...]], message: str) -> None:
    cluster = make_cluster(nodes=1, gpus=4)
    rigid = Job(make_job("R").gpus(2).build())
    elastic = Job(make_job("E").gpus(2).elastic(1, 4).build())
    blocker = _running("Z", (0,))
    with pytest.raises(AllocationError, match=message):
        run_allocation_cycle(FixedTargets(targets), _snapshot(cluster, [blocker], [rigid, elastic]))


def test_keeps_reads_each_gpu_node_from_the_cluster_list() -> None:
    # ``keeps`` reads the cluster's ``gpu_node_list`` (Python ints), not the numpy array
    cluster = make_cluster(nodes=2, gpus=2)
    one, two = _running("A", (1,)), _running("B", (0, 2))
    assert Assignment((0,)).keeps(one, cluster) and Assignment((0, 1)).keeps(two, cluster)
    cluster.__dict__["gpu_node_list"] = [1, 1, 1, 1]  # a stand-in: keeps must follow it
    assert Assignment((0,)).keeps(one, cluster) is False
    assert Assignment((1,)).keeps(one, cluster) and Assignment((1, 1)).keeps(two, cluster)


def test_keeps_compares_the_share_of_a_one_gpu_job_and_of_each_gpu_of_a_gang() -> None:
    cluster = make_cluster(nodes=1, gpus=2)
    half = _running("H", (0,))
    half.shares = (0.5,)
    assert Assignment((0,), share=0.5).keeps(half, cluster)
    assert not Assignment((0,)).keeps(half, cluster)  # the spec's whole GPU
    gang = _running("G", (0, 1))
    gang.shares = (1.0, 0.5)
    assert not Assignment((0, 0)).keeps(gang, cluster)
    gang.shares = (1.0, 1.0)
    assert Assignment((0, 0)).keeps(gang, cluster)


def test_a_rigid_job_of_its_size_passes_the_check_an_elastic_one_keeps_its_bounds() -> None:
    cluster = make_cluster(nodes=1, gpus=4)
    rigid = Job(make_job("R").gpus(2).build())
    elastic = Job(make_job("E").gpus(2).elastic(2, 3).build())
    result = run_allocation_cycle(FixedTargets({"R": (0, 0), "E": (0, 0)}),
                                  _snapshot(cluster, [], [rigid, elastic]))
    assert sorted(s.job_id for s in result.starts) == ["E", "R"]
    with pytest.raises(AllocationError, match="may run with 2..3"):
        run_allocation_cycle(FixedTargets({"E": (0,)}), _snapshot(cluster, [], [elastic]))


class Returns:
    """An allocator that returns ``value`` as it is (a plugin's mistake)."""

    name = "mine"

    def __init__(self, value: object) -> None:
        self.value = value

    def allocate(self, state: CycleState) -> object:
        return self.value


@pytest.mark.parametrize(("value", "message"), [
    ([Assignment((0, 0))], "returned list, not a mapping of job id -> Assignment"),
    (None, "returned NoneType, not a mapping"),
    ({"R": (0, 0)}, "gave R a tuple, not an Assignment"),
    ({"R": [0, 0]}, "gave R a list, not an Assignment"),
], ids=["list", "none", "tuple-of-nodes", "list-of-nodes"])
def test_an_allocate_that_returns_no_assignments_is_named(value: object, message: str) -> None:
    cluster = make_cluster(nodes=1, gpus=4)
    rigid = Job(make_job("R").gpus(2).build())
    with pytest.raises(AllocationError, match=f"^mine: allocate\\(\\) {message}"):
        run_allocation_cycle(Returns(value), _snapshot(cluster, [], [rigid]))  # type: ignore[arg-type]


# Packing: A holds GPU 0 whole; the target halves it and puts waiting B beside it on GPU 0.
def test_shared_gpu_targets() -> None:
    cluster = make_cluster(nodes=1, gpus=2)
    a = _running("A", (0,))
    b = Job(make_job("B").build())
    allocator = FixedTargets({})
    allocator.targets = {"A": Assignment((0,), share=0.5, gpus=(0,)),
                         "B": Assignment((0,), share=0.5, gpus=(0,))}
    result = run_allocation_cycle(allocator, _snapshot(cluster, [a], [b]))
    assert [(r.job_id, r.gpus, r.shares) for r in result.resizes] == [("A", (0,), (0.5,))]
    assert [(s.job_id, s.gpus, s.shares) for s in result.starts] == [("B", (0,), (0.5,))]


def test_named_gpu_without_room_fails() -> None:
    cluster = make_cluster(nodes=1, gpus=2)
    a = _running("A", (0,))
    allocator = FixedTargets({"A": (0,)})
    allocator.targets["B"] = Assignment((0,), share=0.5, gpus=(0,))
    with pytest.raises(AllocationError, match="GPU 0"):
        run_allocation_cycle(allocator, _snapshot(cluster, [a], [Job(make_job("B").build())]))


@pytest.mark.parametrize("policy", ["gavel-fifo", "gavel-las", "gandiva"])
def test_a_policy_that_counts_gpus_alone_never_overbooks_cpus(policy: str) -> None:
    # One node: 2 GPUs, 8 CPUs; each job asks 6 CPUs per GPU. The policy gave both GPUs at
    # once and the run stopped ("node 0 has 2 free CPUs, the job's 1 worker(s) there need
    # 6"); now the second job waits for the first's CPUs.
    from builders import records_of, simulator

    from dlsched.cluster.cluster import Node
    from dlsched.workload.job import JobSpec

    cluster = Cluster("c", (Node("n", "V100", 2, cpus=8),))
    jobs = [JobSpec(j, 0, 1, 100.0, cpus_per_gpu=6) for j in ("a", "b")]
    records = records_of(simulator(policy, cluster, jobs))
    assert {r.status for r in records.values()} == {"finished"}
    assert sorted(r.first_start for r in records.values()) == [0.0, 100.0]


@pytest.mark.parametrize("policy", ["pack-aware", "pack-naive", "gandiva", "gavel-fifo"])
@pytest.mark.parametrize("share", [1.0, 0.5], ids=["whole", "half"])
def test_a_target_short_of_cpus_moves_to_a_node_with_room(policy: str, share: float) -> None:
    """A 2-GPU node with 2 CPUs, all taken by job a, and an idle 4-GPU node with 32: the
    policy gave job b (1 CPU) the small node's free GPU, which lacks the CPU, and b waited
    until a ended (1000 s) beside 4 idle GPUs; on the Alibaba 2023 pod list (pack-aware, 2,000
    pods on alibaba-2023) 19 pods waited to the end of the run. b now starts at once on the
    big node's GPUs, as a target that breaks a per-node cap already did."""
    from dataclasses import replace

    from builders import records_of, simulator

    from dlsched.cluster.cluster import Node

    cluster = Cluster("c", (Node("small", "V100", 2, cpus=2, memory_gb=64),
                            Node("big", "V100", 4, cpus=32, memory_gb=256)))
    jobs = [replace(make_job("a").work(1000).build(), cpus_per_gpu=2),
            replace(make_job("b").at(1).work(10).build(), cpus_per_gpu=1, gpu_share=share)]
    sim = simulator(policy, cluster, jobs)
    records = records_of(sim)
    assert records["b"].first_start == 1.0
    assert [s.gpus for s in sim.core.segments.all() if s.job_id == "b"][0][0] >= 2
