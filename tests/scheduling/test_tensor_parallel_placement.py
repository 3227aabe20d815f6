"""Tensor-parallel groups never span nodes (issue 17: "a TP group never spans nodes when it fits
in one"): a job with ``tensor_parallel`` t gets whole groups of t GPUs per node, or waits."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from builders import cycle_state, make_cluster, make_job
from hypothesis import given
from hypothesis import strategies as st

from dlsched.cluster.cluster import Cluster
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.placement import place
from dlsched.scheduling.registry import build_policy
from dlsched.workload.job import Job, JobSpec


def _spec(gpus: int, tp: int, job_id: str = "j") -> JobSpec:
    return dataclasses.replace(make_job(job_id).gpus(gpus).build(), tensor_parallel=tp)


def _per_node(cluster: Cluster, gpus: tuple[int, ...]) -> Counter[int]:
    return Counter(int(cluster.gpu_node[g]) for g in gpus)


def _place(cluster: Cluster, spec: JobSpec, used: dict[int, float], placement: str = "consolidated"
           ) -> tuple[tuple[int, ...], object]:
    profile = build_policy("fifo", placement=placement)
    state = cycle_state(cluster, used)
    return place(state, Job(spec), profile.filters, profile.scores, profile.take_limit)


@pytest.mark.parametrize("placement", ["consolidated", "most-free", "best-fit"])
def test_groups_skip_a_node_with_room_for_less_than_a_group(placement: str) -> None:
    # node 0 has 3 free GPUs (GPU 0 busy), nodes 1 and 2 have 4: 8 GPUs in groups of 4 take
    # nodes 1 and 2; without groups, "most-free" would take 3 + 4 + 1.
    cluster = make_cluster(nodes=3, gpus=4)
    chosen, status = _place(cluster, _spec(8, 4), {0: 1.0}, placement)
    assert status.ok
    assert sorted(_per_node(cluster, chosen).items()) == [(1, 4), (2, 4)]


def test_groups_of_two_split_a_node_only_at_group_boundaries() -> None:
    # free: node 0 three GPUs, node 1 four: 6 GPUs in groups of 2 = 2 on node 0 + 4 on node 1.
    cluster = make_cluster(nodes=2, gpus=4)
    chosen, status = _place(cluster, _spec(6, 2), {0: 1.0}, "most-free")
    assert status.ok
    assert all(count % 2 == 0 for count in _per_node(cluster, chosen).values())


def test_a_job_whose_groups_do_not_fit_waits_and_says_why() -> None:
    # 10 GPUs free (3 + 3 + 4) but only one whole group of 4: an 8-GPU TP-4 job waits, while
    # an 8-GPU job without groups fits.
    cluster = make_cluster(nodes=3, gpus=4)
    job = Job(_spec(8, 4))
    state = cycle_state(cluster, {0: 1.0, 4: 1.0}, waiting=[job])
    result = run_cycle(build_policy("fifo"), state.snapshot)
    assert result.starts == ()
    assert "in groups of 4 per node" in result.reasons["j"]
    chosen, status = _place(cluster, make_job("k").gpus(8).build(), {0: 1.0, 4: 1.0})
    assert status.ok and len(chosen) == 8


def test_a_grouped_failure_does_not_stop_an_ungrouped_job_of_the_same_size() -> None:
    # The cycle skips jobs that need at least what a job of the same shape failed to get; a
    # TP-4 job failing must not make a plain 8-GPU job behind it look hopeless.
    cluster = make_cluster(nodes=3, gpus=4)
    grouped = Job(_spec(8, 4, "a"))
    plain = Job(make_job("b").gpus(8).build())
    state = cycle_state(cluster, {0: 1.0, 4: 1.0}, waiting=[grouped, plain])
    result = run_cycle(build_policy("sjf"), state.snapshot)  # sjf tries every waiting job
    assert [start.job_id for start in result.starts] == ["b"]


def test_a_bad_tensor_parallel_degree_is_refused() -> None:
    with pytest.raises(ValueError, match="tensor_parallel must be >= 1 and divide num_gpus 6"):
        _spec(6, 4)


@given(sizes=st.lists(st.sampled_from([4, 8]), min_size=1, max_size=5),
       busy=st.lists(st.integers(0, 39), max_size=20),
       tp=st.sampled_from([1, 2, 4, 8]), groups=st.integers(1, 4),
       placement=st.sampled_from(["consolidated", "most-free", "best-fit", "spread"]))
def test_placed_groups_are_whole_and_a_refusal_is_true(sizes: list[int], busy: list[int],
                                                       tp: int, groups: int,
                                                       placement: str) -> None:
    cluster = make_cluster(nodes=len(sizes), gpus=max(sizes))
    used = {g: 1.0 for g in busy if g < cluster.num_gpus}
    chosen, status = _place(cluster, _spec(tp * groups, tp), used, placement)
    free_by_node = Counter(int(cluster.gpu_node[g]) for g in range(cluster.num_gpus)
                           if g not in used)
    whole_groups = sum(free // tp for free in free_by_node.values())
    if status.ok:
        assert len(chosen) == tp * groups
        assert all(count % tp == 0 for count in _per_node(cluster, chosen).values())
    else:
        assert whole_groups < groups, (free_by_node, tp, groups)
