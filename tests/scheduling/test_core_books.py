"""The core's GPU books (``Scheduler._adjust``): taking or giving a job's shares moves each
GPU's free share, its node's count of wholly free GPUs and version, and the GPUs in use as
``state.shift_free`` steps do, GPU by GPU, whatever the shares (whole GPUs take a shorter
path: ``_adjust_whole``)."""

from __future__ import annotations

import numpy as np
import pytest
from builders import NullExecutor, make_cluster

from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import fifo
from dlsched.scheduling.scheduler import Scheduler
from dlsched.scheduling.state import shift_free
from dlsched.sim.clock import SimClock

# (free shares before, on 2 nodes of 4 GPUs; the job's GPUs; its shares; +1 give, -1 take)
CASES = {
    "take whole GPUs of two nodes": ([1.0] * 8, (1, 2, 5), (1.0, 1.0, 1.0), -1.0),
    "give them back": ([1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0], (1, 2, 5), (1.0,) * 3, 1.0),
    "take whole GPUs partly used": ([0.5, 1.0, 0.25, 1.0, 1.0, 1.0, 1.0, 1.0], (0, 1, 2),
                                    (1.0,) * 3, -1.0),
    "give whole GPUs partly free": ([0.5, 0.0, 0.25, 1.0, 1.0, 1.0, 1.0, 1.0], (0, 1, 2),
                                    (1.0,) * 3, 1.0),
    "take halves": ([1.0, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0], (0, 1, 4), (0.5,) * 3, -1.0),
    "give halves": ([0.5, 0.0, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0], (0, 1, 4), (0.5,) * 3, 1.0),
    "one whole GPU": ([1.0] * 8, (6,), (1.0,), -1.0),
    "mixed shares": ([1.0] * 8, (3, 4), (1.0, 0.5), -1.0),
}


def core_with(free: list[float]) -> Scheduler:
    core = Scheduler(make_cluster(nodes=2, gpus=4), fifo(), LinearScaling(), SimClock(),
                     NullExecutor())
    core.free[:] = free
    core.node_free[:] = [sum(share >= 1.0 for share in free[n * 4:n * 4 + 4]) for n in (0, 1)]
    core.used_gpus = 8 - sum(free)
    return core


@pytest.mark.parametrize("free, gpus, shares, sign", CASES.values(), ids=CASES.keys())
def test_books_move_as_shift_free_steps(free: list[float], gpus: tuple[int, ...],
                                        shares: tuple[float, ...], sign: float) -> None:
    core, expected = core_with(free), core_with(free)
    core._adjust(gpus, shares, sign)
    used = expected.used_gpus
    for gpu, share in zip(gpus, shares, strict=True):
        shift_free(expected.free, expected.node_free, expected._gpu_node, gpu, sign * share)
        expected.node_version[expected._gpu_node[gpu]] += 1
        used -= sign * share
    assert core.free.tolist() == expected.free.tolist()
    assert core.node_free.tolist() == expected.node_free.tolist()
    assert np.array_equal(core.node_version, expected.node_version)
    assert core.used_gpus == used


@pytest.mark.parametrize("before", [1.0, 0.0, 0.5, 1.0 - 1e-12, 1e-12])
@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["give", "take"])
def test_one_whole_gpu_moves_the_books_as_shift_free(before: float, sign: float) -> None:
    """A start or stop of one whole GPU (``_adjust_whole``'s one-GPU steps, the path of most
    jobs' starts and stops) moves the books as ``_adjust``'s share step does, from any free
    share: the GPU, its node's whole count and version, ``used_gpus`` to the same float."""
    free = [1.0, 0.0, before, 1.0, 1.0, 1.0, 0.0, 1.0]
    core, expected = core_with(free), core_with(free)
    core.used_gpus = expected.used_gpus = 3.25  # not a whole number: the float step shows
    core._adjust_whole((2,), sign)
    expected._adjust((2,), (1.0,), sign)
    assert core.free.tolist() == expected.free.tolist()
    assert core.node_free.tolist() == expected.node_free.tolist()
    assert np.array_equal(core.node_version, expected.node_version)
    assert core.used_gpus == expected.used_gpus
