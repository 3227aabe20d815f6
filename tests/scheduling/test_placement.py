"""Placement: strategies (consolidated, spread, best-fit, topology), NVLink domains, gangs,
fractional shares, and the GPU-type and node-pool filters."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
from builders import cluster_of, cycle_state, make_cluster, make_job, run

from dlsched.cluster.cluster import Cluster, Node
from dlsched.cluster.topology import LinkLevel
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.framework import Code, Status
from dlsched.scheduling.placement import pick_gpus, place
from dlsched.scheduling.plugins.gang import GangPermit
from dlsched.scheduling.registry import build_policy
from dlsched.workload.job import Job, JobSpec


def _place(cluster: Cluster, spec: JobSpec, placement: str = "consolidated",
           used: Mapping[int, float] | None = None) -> tuple[tuple[int, ...], Status]:
    profile = build_policy("fifo", placement=placement)
    state = cycle_state(cluster, used)
    return place(state, Job(spec), profile.filters, profile.scores, profile.take_limit)


def _nodes(cluster: Cluster, gpus: tuple[int, ...]) -> list[int]:
    return sorted({int(cluster.gpu_node[g]) for g in gpus})


def _used(*gpus: int) -> dict[int, float]:
    return dict.fromkeys(gpus, 1.0)


# Two or three 4-GPU nodes; `used` lists busy GPUs (node 0: 0-3, node 1: 4-7, node 2: 8-11).
STRATEGIES = [
    # consolidated: one node when one has room, the tightest such node first.
    ("consolidated-whole-node", "consolidated", 2, _used(0, 1), 4, (4, 5, 6, 7)),
    ("consolidated-tightest", "consolidated", 2, _used(0, 1), 2, (2, 3)),
    ("consolidated-tie-lowest-node", "consolidated", 2, {}, 4, (0, 1, 2, 3)),
    # best-fit: the fullest node that still fits the whole job.
    ("best-fit-fullest", "best-fit", 3, _used(0, 4, 5), 2, (6, 7)),
    ("best-fit-one-gpu", "best-fit", 3, _used(0, 4, 5), 1, (6,)),
    ("best-fit-skips-node-too-small", "best-fit", 2, _used(0, 1, 2, 4, 5), 2, (6, 7)),
    # most-free: the node with the most free GPUs, as many as fit, then the next.
    ("most-free-emptiest-first", "most-free", 3, _used(0, 4, 5), 2, (8, 9)),
    ("most-free-splits-greedily", "most-free", 3, _used(0, 4, 5, 8), 5, (1, 2, 3, 9, 10)),
]


@pytest.mark.parametrize(("placement", "nodes", "used", "gpus", "expected"),
                         [c[1:] for c in STRATEGIES], ids=[c[0] for c in STRATEGIES])
def test_strategy_picks(placement: str, nodes: int, used: dict[int, float], gpus: int,
                        expected: tuple[int, ...]) -> None:
    chosen, status = _place(make_cluster(nodes=nodes, gpus=4), make_job("j").gpus(gpus).build(),
                            placement, used)
    assert status.ok
    assert chosen == expected


def test_spread_puts_one_worker_per_node() -> None:
    cluster = make_cluster(nodes=4, gpus=4)
    chosen, status = _place(cluster, make_job("j").gpus(4).build(), "spread")
    assert status.ok and chosen == (0, 4, 8, 12)
    assert _nodes(cluster, chosen) == [0, 1, 2, 3]


def test_spread_wraps_around_when_workers_outnumber_nodes() -> None:
    cluster = make_cluster(nodes=2, gpus=4)
    chosen, status = _place(cluster, make_job("j").gpus(4).build(), "spread")
    assert status.ok and len(chosen) == 4
    assert sorted(int(cluster.gpu_node[g]) for g in chosen) == [0, 0, 1, 1]


# Four 4-GPU nodes, racks {n0, n1} and {n2, n3}. With GPU 15 busy, rack 0 has 8 free GPUs and
# rack 1 has 7. A 6-GPU job under "topology" stays in rack 0; plain consolidation takes node 0,
# then the tightest node that fits the other 2 workers (n3, in rack 1).
@pytest.mark.parametrize(("used", "racks"), [(_used(15), [0]), (_used(0), [1])],
                         ids=["rack-0-roomier", "rack-1-roomier"])
def test_topology_keeps_a_multi_node_job_in_one_rack(used: dict[int, float],
                                                     racks: list[int]) -> None:
    cluster = make_cluster(nodes=4, gpus=4, racks=2)
    chosen, status = _place(cluster, make_job("j").gpus(6).build(), "topology", used)
    assert status.ok and len(chosen) == 6
    assert sorted({int(cluster.node_rack[n]) for n in _nodes(cluster, chosen)}) == racks


def test_consolidated_alone_may_cross_racks() -> None:
    cluster = make_cluster(nodes=4, gpus=4, racks=2)
    chosen, _ = _place(cluster, make_job("j").gpus(6).build(), "consolidated", _used(15))
    assert chosen == (0, 1, 2, 3, 12, 13)
    assert cluster.link(chosen[0], chosen[-1]) is LinkLevel.NETWORK


# One node of 8 GPUs in two NVLink domains: GPUs 0-3 and 4-7.
NVLINK = [
    ("fits-in-partly-used-domain", _used(0, 1), 2, [2, 3]),
    ("skips-domain-too-small", _used(0, 1), 3, [4, 5, 6]),
    ("fullest-domain-with-room", _used(0, 4, 5), 2, [6, 7]),
    ("second-domain-partly-used", _used(0, 1, 4), 3, [5, 6, 7]),
    ("bigger-than-a-domain", _used(0, 1), 6, [2, 3, 4, 5, 6, 7]),
]


@pytest.mark.parametrize(("used", "count", "expected"), [c[1:] for c in NVLINK],
                         ids=[c[0] for c in NVLINK])
def test_pick_gpus_stays_in_one_nvlink_domain(used: dict[int, float], count: int,
                                              expected: list[int]) -> None:
    cluster = make_cluster(nodes=1, gpus=8, nvlink=4)
    assert pick_gpus(cycle_state(cluster, used), 0, count, 1.0) == expected
    if count <= 4:
        assert {cluster.link(a, b) for a in expected for b in expected if a != b} == {
            LinkLevel.NVLINK}


def test_place_uses_the_nvlink_domain() -> None:
    cluster = make_cluster(nodes=1, gpus=8, nvlink=4)
    chosen, status = _place(cluster, make_job("j").gpus(3).build(), used=_used(0, 1))
    assert status.ok and chosen == (4, 5, 6)


def test_gang_is_placed_whole_across_nodes() -> None:
    cluster = make_cluster(nodes=2, gpus=4)
    chosen, status = _place(cluster, make_job("j").gpus(8).build())
    assert status.ok and chosen == tuple(range(8))


def test_gang_that_does_not_fit_reserves_nothing() -> None:
    cluster = make_cluster(nodes=2, gpus=4)
    profile = build_policy("fifo")
    state = cycle_state(cluster, _used(5))
    free, node_free = state.free.copy(), state.node_free.copy()
    chosen, status = place(state, Job(make_job("j").gpus(8).build()), profile.filters,
                           profile.scores, profile.take_limit)
    assert chosen == () and status.code is Code.UNSCHEDULABLE
    assert "needs 8 GPUs, 7 free" in status.reason
    assert np.array_equal(state.free, free) and np.array_equal(state.node_free, node_free)
    assert state.started == {}


def test_gang_that_does_not_fit_does_not_start_in_a_cycle() -> None:
    cluster = make_cluster(nodes=2, gpus=4)
    job = Job(make_job("j").gpus(8).build())
    state = cycle_state(cluster, _used(5), waiting=[job])
    result = run_cycle(build_policy("fifo"), state.snapshot)
    assert result.starts == () and result.preemptions == ()
    assert "needs 8 GPUs, 7 free" in result.reasons["j"]


def test_gang_permit_refuses_a_partial_allocation() -> None:
    job = Job(make_job("j").gpus(4).build())
    state = cycle_state(make_cluster())
    assert GangPermit().permit(state, job, (0, 1, 2, 3)).ok
    refused = GangPermit().permit(state, job, (0, 1, 2))
    assert refused.code is Code.UNSCHEDULABLE and refused.plugin == "gang"
    assert str(refused) == "[gang] gang needs 4 workers, got 3"


# Fractions pack onto the GPU with the least room that still fits.
@pytest.mark.parametrize(("share", "expected"), [(0.5, (0,)), (0.25, (0,)), (0.75, (1,))],
                         ids=["half-fills-gpu-0", "quarter-packs", "three-quarters-needs-gpu-1"])
def test_fraction_packs_onto_the_fullest_gpu(share: float, expected: tuple[int, ...]) -> None:
    cluster = make_cluster(nodes=1, gpus=2)
    chosen, status = _place(cluster, make_job("j").share(share).build(), used={0: 0.5})
    assert status.ok and chosen == expected


# Why a fraction waits: GPUs with room for it, not wholly free GPUs ("needs 1 GPU, none free"
# was said of a 0.4 job beside two GPUs with 0.2 left each, as if it asked a whole one).
@pytest.mark.parametrize(("placement", "workers", "share", "reason"), [
    ("consolidated", 1, 0.4, "needs 1 GPU with 0.4 free, none on fitting nodes"),
    ("best-fit", 1, 0.4, "needs 1 GPU with 0.4 free, none on fitting nodes"),
    ("consolidated", 2, 0.3, "needs 2 GPUs with 0.3 free each, none on fitting nodes"),
    ("consolidated", 3, 0.2, "needs 3 GPUs with 0.2 free each, 2 on fitting nodes"),
], ids=["one-share", "one-share-single-node-score", "two-shares", "three-shares"])
def test_a_fraction_that_does_not_fit_says_how_much_it_needs(placement: str, workers: int,
                                                             share: float, reason: str) -> None:
    cluster = make_cluster(nodes=1, gpus=2)
    job = make_job("j").gpus(workers).share(share).build()
    chosen, status = _place(cluster, job, placement, used={0: 0.8, 1: 0.8})
    assert chosen == () and status.reason == reason


# One GPU, three 100 s jobs asking for half a GPU each: two share the GPU from 0 to 100, the
# third waits for one of them: 100->200.
def test_two_half_gpu_jobs_share_one_gpu() -> None:
    jobs = [make_job(f"h{i}").share(0.5).work(100).build() for i in range(3)]
    records = run("fifo", make_cluster(nodes=1, gpus=1), jobs)
    starts = {job_id: (r.first_start, r.finish_time) for job_id, r in records.items()}
    assert starts == {"h0": (0.0, 100.0), "h1": (0.0, 100.0), "h2": (100.0, 200.0)}
    assert records["h0"].gpu_seconds == pytest.approx(50.0)


MIXED = cluster_of(Node("k80", "K80", 4), Node("v100", "V100", 4))
TYPES = [
    ("only-v100", ("V100",), (4,)),
    ("either", ("K80", "V100"), (0,)),
    ("any", (), (0,)),
]


@pytest.mark.parametrize(("types", "expected"), [c[1:] for c in TYPES],
                         ids=[c[0] for c in TYPES])
def test_gpu_type_filter(types: tuple[str, ...], expected: tuple[int, ...]) -> None:
    chosen, status = _place(MIXED, make_job("j").types(*types).build())
    assert status.ok and chosen == expected


def test_gpu_type_filter_with_no_such_type() -> None:
    chosen, status = _place(MIXED, make_job("j").types("A100").build())
    assert chosen == () and status.plugin == "gpu-type"
    assert str(status) == "[gpu-type] no node passes this filter"


POOLS = [("pool-b", "b", (4,)), ("pool-a", "a", (0,)), ("unknown-pool-runs-anywhere", "zzz", (0,))]


@pytest.mark.parametrize(("pool", "expected"), [c[1:] for c in POOLS], ids=[c[0] for c in POOLS])
def test_node_pool_filter(pool: str, expected: tuple[int, ...]) -> None:
    cluster = make_cluster(nodes=2, gpus=4, pools=["a", "b"])
    chosen, status = _place(cluster, make_job("j").pool(pool).build())
    assert status.ok and chosen == expected


def test_full_pool_does_not_spill_into_another() -> None:
    cluster = make_cluster(nodes=2, gpus=4, pools=["a", "b"])
    chosen, status = _place(cluster, make_job("j").pool("b").build(), used=_used(4, 5, 6, 7))
    assert chosen == () and not status.ok


# A job's workers hold distinct GPUs, whatever their share: three workers of 0.3 on one GPU
# were counted as room for three (1 // 0.3) and waited for ever; two nodes with CPUs modelled
# the same (``most_workers_per_node``).
@pytest.mark.parametrize("cpus", [0.0, 1.0], ids=["gpus-only", "with-cpus"])
def test_more_fractional_workers_than_gpus_can_never_run(cpus: float) -> None:
    from dataclasses import replace

    cluster = cluster_of(Node("n", "V100", 1, cpus=8))
    job = replace(make_job("a").gpus(3).share(0.3).work(100).build(), cpus_per_gpu=cpus)
    records = run("fifo", cluster, [job, make_job("b").gpus(1).share(0.3).work(100).build()])
    assert records["a"].status == "failed"
    assert records["a"].pending_reason.startswith("can never run: needs 3 GPUs, the nodes it "
                                                  "may use have 1")
    assert records["b"].status == "finished"
