"""AlpaServe-style placement: the pipeline's timing by hand, and the group size chosen by the
workload (shared pipelines for bursts, dedicated GPUs when stages cost too much)."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.serving.alpaserve import (
    Group,
    Placement,
    ServedModel,
    Workload,
    alpaserve,
    attainment,
    dedicated,
    serve,
)

A = ServedModel("a", 1.0, 10.0)
B = ServedModel("b", 1.0, 10.0)


def test_a_two_stage_pipeline_overlaps_two_requests_by_hand() -> None:
    """Stage time 0.5 s: the first request leaves at 1.0; the second enters stage 1 at 0.5,
    stage 2 at 1.0, leaves at 1.5. Two dedicated GPUs serve both in 1.0."""
    both = Workload(np.array([0.0, 0.0]), np.array([0, 0]))
    shared = Placement((Group(2, frozenset({0})),))
    assert serve(shared, [A], both, overhead=0.0).tolist() == pytest.approx([1.0, 1.5])
    assert serve(dedicated([A], 2), [A], both).tolist() == pytest.approx([1.0, 1.0])
    # per-stage overhead: 1 / 2 x (1 + 0.2) = 0.6 per stage
    assert serve(shared, [A], both, overhead=0.2).tolist() == pytest.approx([1.2, 1.8])


def test_a_model_no_group_hosts_misses_its_slo() -> None:
    work = Workload(np.array([0.0, 0.1]), np.array([0, 1]))
    only_a = Placement((Group(1, frozenset({0})),))
    assert np.isinf(serve(only_a, [A, B], work)[1])
    assert attainment(only_a, [A, B], work, slo_scale=5) == 0.5


def test_bursts_choose_shared_pipelines_and_beat_dedicated_gpus() -> None:
    """AlpaServe §3.1: two models, two GPUs that each hold one; bursty arrivals (CV 2) of one
    model at a time use both GPUs when the models share a 2-stage pipeline (78% of requests
    within 2x their latency against 60% on one GPU each)."""
    work = Workload.gamma([0.3, 0.3], cv=2.0, duration=400, seed=2)
    placement, stages, score = alpaserve([A, B], work, gpus=2, gpu_memory_gb=10,
                                         slo_scale=2.0, overhead=0.05)
    base = attainment(dedicated([A, B], 2), [A, B], work, 2.0, 0.05)
    assert stages == 2 and placement.groups[0].models == {0, 1}
    assert score > base + 0.1


def test_costly_stages_under_steady_load_keep_dedicated_gpus() -> None:
    """Poisson arrivals (CV 1) and a 60% cost per extra stage: pipelines lose; the search
    keeps one model per GPU."""
    work = Workload.gamma([0.5, 0.5], cv=1.0, duration=400, seed=2)
    placement, stages, score = alpaserve([A, B], work, gpus=2, gpu_memory_gb=10,
                                         slo_scale=2.0, overhead=0.6)
    assert stages == 1
    assert score >= attainment(dedicated([A, B], 2), [A, B], work, 2.0, 0.6)


def test_memory_limits_what_a_group_hosts() -> None:
    big = ServedModel("big", 1.0, 30.0)  # needs two 20 GB GPUs
    work = Workload.gamma([0.3, 0.3], cv=2.0, duration=100, seed=0)
    placement, stages, _ = alpaserve([big, A], work, gpus=2, gpu_memory_gb=20, slo_scale=3)
    for group in placement.groups:
        assert sum([big, A][m].memory_gb for m in group.models) <= group.gpus * 20
    assert any(0 in g.models for g in placement.groups)  # only a 2-GPU group can host it
    assert stages == 2
