"""Pollux (OSDI'21 §4.2) allocates nodes, so a job's worker count is only ever drawn from the
GPUs it can run on: the types the throughput model rates above 0 for it (the core's
``runnable`` filter). Gavel's physical table rates ResNet-50 at batch 128 0 on a K80."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from builders import cluster_of, cycle_state, make_job

from dlsched.cluster.cluster import Node
from dlsched.perf.gavel_table import GavelThroughputs
from dlsched.policies.elastic.search import Budgets, greedy_counts, mask_budgets
from dlsched.policies.pollux import PolluxAllocator
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

K80_THEN_V100 = cluster_of(Node("k80", "K80", 4), Node("v100", "V100", 4))


def physical_state(models: list[str]) -> CycleState:
    """Waiting elastic (1..8 GPUs) jobs of Gavel models at batch 128 on 4 K80 + 4 V100."""
    jobs = [Job(replace(make_job(f"j{i}").gpus(1).elastic(1, 8).work(1000).build(),
                        model=model, batch_size=128)) for i, model in enumerate(models)]
    state = cycle_state(K80_THEN_V100, waiting=jobs)
    snapshot = replace(state.snapshot, throughput=GavelThroughputs(source="physical_cluster"))
    return CycleState.begin(snapshot)


@pytest.mark.parametrize(("models", "expected"), [
    # both rated 0 on the K80: they share the 4 V100s (was 4 + 0: both planned 4 of 8 GPUs)
    pytest.param(["ResNet-50", "ResNet-50"], {"j0": {1: 2}, "j1": {1: 2}}, id="both-v100-only"),
    # one alone: it is planned the 4 GPUs it can use, not 8
    pytest.param(["ResNet-50"], {"j0": {1: 4}}, id="one-v100-only"),
])
def test_counts_only_gpus_the_job_can_run_on(models: list[str],
                                             expected: dict[str, dict[int, int]]) -> None:
    result = PolluxAllocator().allocate(physical_state(models))
    assert {job: dict(a.per_node()) for job, a in result.items()} == expected


def test_planned_counts_fit_the_rated_gpus() -> None:
    state = physical_state(["ResNet-50", "ResNet-50", "ResNet-50"])
    planned = PolluxAllocator().allocate(state)
    assert sum(sum(a.per_node().values()) for a in planned.values()) <= 4
    assert all(set(a.per_node()) == {1} for a in planned.values())


@pytest.mark.parametrize(("utility", "budgets", "expected"), [
    pytest.param([[0, 5, 9, 12, 14], [0, 1, 2, 3, 4]], None, [4, 0], id="no-budgets"),
    # job 0 may use only 2 GPUs: the rest go to job 1
    pytest.param([[0, 5, 9, 12, 14], [0, 1, 2, 3, 4]],
                 Budgets(((0,), ()), (2,)),
                 [2, 2], id="budget-caps-one-job"),
    # both on one budget of 2 GPUs
    pytest.param([[0, 5, 9, 12, 14], [0, 4.5, 8, 11, 13]],
                 Budgets(((0,), (0,)), (2,)),
                 [1, 1], id="shared-budget"),
])
def test_greedy_counts_within_budgets(utility: list[list[float]], budgets: Budgets | None,
                                      expected: list[int]) -> None:
    counts = greedy_counts(np.array(utility, dtype=float), 4, budgets=budgets)
    assert counts.tolist() == expected


def test_mask_budgets_nest() -> None:
    every, v100, p100_v100 = np.ones(3, bool), np.array([0, 0, 1], bool), np.array([0, 1, 1], bool)
    budgets = mask_budgets(np.array([4, 4, 4]), [None, every, v100, p100_v100])
    assert budgets is not None
    assert budgets.gpus == (4, 8)
    assert budgets.groups == ((), (), (0, 1), (1,))
    assert budgets.most(12).tolist() == [12, 12, 4, 8]
    assert mask_budgets(np.array([4, 4]), [None, np.ones(2, bool)]) is None
