"""GPU fragmentation of a node for a target workload (Weng et al., "Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC'23, §3).

The target workload M is a set of task types m, each with its popularity p_m (the share of
tasks of that type). For one task type, a node's free GPU resources are a *fragment* when the
task cannot use them:

- if the task cannot run on the node at all (no free GPU of a type it accepts, too few GPUs
  with room, too few CPUs, or it asks for no GPU), every free milli-GPU of the node is a
  fragment: F_n(m) = sum of the free milli-GPUs of n;
- if it can run, only the GPUs with less room than the task's per-GPU request are fragments:
  F_n(m) = sum of free_g over the GPUs g with free_g < the task's milli-GPUs per GPU.

The node's fragmentation for the workload is the expectation F_n(M) = sum_m p_m F_n(m) (§3.2,
Eq. 1-2; the artifact's ``NodeGpuShareFragAmountScore``, pkg/utils/frag.go). The target
workload is made of the most popular task types, in decreasing popularity, until they cover
95% of tasks, re-weighted to sum to 1 (the artifact's ``GetTypicalPods`` with
``podPopularityThreshold`` 95 and step 1, scripts/generate_config_and_run.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from dlsched.fragmentation.view import Demand

COVERAGE = 0.95


@dataclass(frozen=True)
class TaskMix:
    """Task types (``Demand``s, memory ignored) and their popularities (summing to 1);
    ``counts``: how many tasks of each type were seen (None: weights given directly).

    Fragmentation is computed in integers (popularities scaled to whole numbers) so that a
    node's value is exact: equal states always score equal, whatever is computed with them."""

    types: tuple[Demand, ...]
    weights: tuple[float, ...]
    counts: tuple[int, ...] | None = None
    _arrays: dict[tuple[str, ...], tuple] = field(default_factory=dict, compare=False,
                                                  repr=False)

    def __post_init__(self) -> None:
        if len(self.types) != len(self.weights) or not self.types:
            raise ValueError("a task mix needs one weight per task type, and one type at least")
        if any(w < 0 for w in self.weights) or abs(sum(self.weights) - 1.0) > 1e-6:
            raise ValueError(f"task-type weights must be >= 0 and sum to 1, got {self.weights}")

    @classmethod
    def of(cls, demands: Iterable[Demand], coverage: float = COVERAGE) -> TaskMix:
        """The most popular task types of ``demands`` covering ``coverage`` of them."""
        counts = Counter(_task_type(d) for d in demands)
        if not counts:
            raise ValueError("a task mix needs at least one task")
        total = sum(counts.values())
        # Most popular first; ties by the larger request first (the artifact's reverse sort).
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], _order_key(kv[0])), reverse=True)
        kept, covered = [], 0
        for task, count in ranked:
            if covered >= coverage * total:
                break
            kept.append((task, count))
            covered += count
        return cls(tuple(t for t, _ in kept), tuple(c / covered for _, c in kept),
                   tuple(c for _, c in kept))

    def arrays(self, type_names: tuple[str, ...]) -> tuple:
        """(cpu, gpu milli, gpu count, weight, allowed[type, node type], milli index, the
        distinct milli values) as arrays, cached per cluster type list."""
        cached = self._arrays.get(type_names)
        if cached is None:
            cpu = np.array([t.cpu_milli for t in self.types], dtype=np.int64)
            milli = np.array([t.gpu_milli for t in self.types], dtype=np.int64)
            count = np.array([t.num_gpus for t in self.types], dtype=np.int64)
            weight = np.array(self.counts if self.counts is not None
                              else [round(w * 1_000_000) for w in self.weights], dtype=np.int64)
            allowed = np.array([[not t.gpu_types or name in t.gpu_types for name in type_names]
                                + [False] for t in self.types], dtype=bool).reshape(
                len(self.types), len(type_names) + 1)
            levels, index = np.unique(milli, return_inverse=True)
            cached = self._arrays[type_names] = (cpu, milli, count, weight, allowed, index,
                                                 levels)
        return cached


def fragmentation(free: np.ndarray, cpu_left: np.ndarray, gpu_type: np.ndarray,
                  mix: TaskMix, type_names: tuple[str, ...]) -> np.ndarray:
    """F_n(M) in milli-GPUs for each row: ``free`` (K, G) milli-GPUs left per GPU (0 past a
    node's GPUs), ``cpu_left`` (K,) milli-CPUs, ``gpu_type`` (K,) index into ``type_names``
    (-1: no GPU type)."""
    cpu, _, count, weight, allowed, index, levels = mix.arrays(type_names)
    total = free.sum(axis=1)
    # Per distinct request level: GPUs with room for it, and the milli-GPUs too small for it.
    room = free[:, None, :] >= levels[None, :, None]                       # (K, L, G)
    fitting = room.sum(axis=2)                                             # (K, L)
    small = np.where(room, 0, free[:, None, :]).sum(axis=2)               # (K, L)
    runs = (allowed[:, gpu_type] & (cpu[:, None] <= cpu_left[None, :])     # (T, K)
            & (count[:, None] <= fitting[:, index].T) & (count[:, None] > 0))
    per_type = np.where(runs, small[:, index].T, total[None, :])          # (T, K)
    return (weight @ per_type) / weight.sum()  # integers: exact whatever the batch


def _task_type(demand: Demand) -> Demand:
    return Demand(demand.cpu_milli, 0, demand.gpu_milli if demand.num_gpus else 0,
                  demand.num_gpus, tuple(sorted(demand.gpu_types)))


def _order_key(task: Demand) -> tuple:
    return (task.cpu_milli, task.gpu_milli, task.num_gpus, "|".join(task.gpu_types))
