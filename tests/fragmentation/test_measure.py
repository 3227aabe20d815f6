"""The fragmentation measure, checked against hand computations from its definition (Weng et
al., ATC'23 §3): a node's free GPU milli-units are a fragment for a task type when the task
cannot run there, or, when it can, the GPUs with less room than it asks per GPU."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.fragmentation import Demand, TaskMix, fragmentation

TYPES = ("V100", "T4")
SHARE = Demand(4000, 0, 500, 1)            # half a GPU, 4 CPUs
PAIR = Demand(4000, 0, 1000, 2)            # two whole GPUs, 4 CPUs
HALF_EACH = TaskMix((SHARE, PAIR), (0.5, 0.5))


def _frag(free: list[int], cpu: int, mix: TaskMix = HALF_EACH, gpu_type: int = 0) -> float:
    return float(fragmentation(np.array([free]), np.array([cpu]), np.array([gpu_type]), mix,
                               TYPES)[0])


@pytest.mark.parametrize("free, cpu, expected", [
    # the share fits (300 is too small for it), the pair does not: 0.5*300 + 0.5*1300
    pytest.param([1000, 300], 8000, 800.0, id="share-fits-pair-does-not"),
    # too few CPUs: neither type runs, every free milli-GPU is a fragment for both
    pytest.param([1000, 300], 2000, 1300.0, id="lack-cpu"),
    # two whole GPUs: both fit, nothing is a fragment
    pytest.param([1000, 1000], 8000, 0.0, id="all-usable"),
    # 400 left on each: the share does not fit (lack GPU), nor the pair
    pytest.param([400, 400], 8000, 800.0, id="lack-gpu"),
    # 600 and 1000: share fits everywhere (no fragment); pair lacks a GPU: 0.5*1600
    pytest.param([600, 1000], 8000, 800.0, id="partial-gpus"),
    pytest.param([0, 0], 8000, 0.0, id="full-node"),
])
def test_node_fragmentation_by_hand(free: list[int], cpu: int, expected: float) -> None:
    assert _frag(free, cpu) == pytest.approx(expected)


def test_gpu_type_and_cpu_only_tasks_see_every_free_gpu_as_fragment() -> None:
    on_t4 = TaskMix((Demand(1000, 0, 500, 1, ("T4",)),), (1.0,))
    assert _frag([1000, 700], 8000, on_t4, gpu_type=0) == 1700  # a V100 node: no access
    assert _frag([1000, 700], 8000, on_t4, gpu_type=1) == 0     # a T4 node: both GPUs fit
    cpu_only = TaskMix((Demand(1000, 0, 0, 0),), (1.0,))
    assert _frag([1000, 700], 8000, cpu_only) == 1700


def test_rows_do_not_depend_on_their_batch() -> None:
    rows = np.array([[1000, 300], [400, 400], [600, 1000]] * 5)
    together = fragmentation(rows, np.full(15, 8000), np.zeros(15, dtype=int), HALF_EACH, TYPES)
    alone = [_frag(list(r), 8000) for r in rows]
    assert together.tolist() == alone  # exactly: equal states must score equal


def test_mix_keeps_the_most_popular_types_up_to_the_coverage() -> None:
    tasks = [SHARE] * 6 + [PAIR] * 3 + [Demand(8000, 0, 1000, 8)]
    mix = TaskMix.of(tasks, coverage=0.9)
    assert mix.types == (SHARE, PAIR)  # 9 of 10 tasks cover 90%
    assert mix.weights == pytest.approx((2 / 3, 1 / 3))
    assert TaskMix.of(tasks, coverage=1.0).weights == pytest.approx((0.6, 0.3, 0.1))


def test_mix_ignores_memory_and_orders_gpu_types() -> None:
    mix = TaskMix.of([Demand(1000, 512, 500, 1, ("T4", "A10")), Demand(1000, 64, 500, 1,
                                                                        ("A10", "T4"))])
    assert mix.types == (Demand(1000, 0, 500, 1, ("A10", "T4")),) and mix.weights == (1.0,)


def test_bad_weights_are_refused() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        TaskMix((SHARE,), (0.5,))
