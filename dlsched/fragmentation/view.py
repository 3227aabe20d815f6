"""The node view GPU-sharing placement scores read: per node, the milli-GPUs left on each GPU,
the CPUs (milli) and memory (MiB) left, and what kinds of tasks it already hosts.

Units follow the Alibaba 2023 trace (Weng et al., ATC'23): a GPU is 1000 milli-GPUs, so shares
and their sums are exact integers. ``NodeView.of_cycle`` builds a view of a scheduler
``CycleState`` (shares x 1000, CPUs and GiB converted); the FGD experiment keeps one view and
updates it in place (``take``), which is what makes its loop fast.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.workload.job import Job

MILLI = 1000
UNLIMITED = np.iinfo(np.int64).max // 4  # a resource the cluster does not model
SHARE_TAG, NO_GPU_TAG = "share", "no-gpu"


@dataclass(frozen=True)
class Demand:
    """What one task asks of the node it runs on: ``cpu_milli`` and ``memory_mib`` in all,
    ``num_gpus`` GPUs with ``gpu_milli`` of each (below 1000: a share of one GPU), on a GPU
    type of ``gpu_types`` (empty: any)."""

    cpu_milli: int
    memory_mib: int
    gpu_milli: int
    num_gpus: int
    gpu_types: tuple[str, ...] = ()

    @property
    def total_gpu_milli(self) -> int:
        return self.gpu_milli * self.num_gpus

    @property
    def is_share(self) -> bool:
        return self.num_gpus == 1 and self.gpu_milli < MILLI

    @property
    def tag(self) -> str:
        """The GPU-affinity kind GpuClustering groups by: no GPU, a share, or k whole GPUs."""
        if self.num_gpus == 0:
            return NO_GPU_TAG
        return SHARE_TAG if self.is_share else f"{self.num_gpus}-gpu"

    @classmethod
    def of_job(cls, job: Job, workers: int | None = None) -> Demand:
        """The demand of ``workers`` (default: all) of a job's workers placed on one node."""
        spec = job.spec
        count = spec.num_gpus if workers is None else workers
        return cls(round(spec.cpus_per_gpu * count * MILLI),
                   round(spec.memory_gb_per_gpu * count * 1024),
                   round(spec.gpu_share * MILLI), count, spec.gpu_types)


@dataclass
class NodeView:
    """``free[n, i]``: milli-GPUs left on GPU i of node n (0 past the node's GPUs);
    ``cpu_left``/``memory_left`` per node (``UNLIMITED`` where not modelled); ``gpu_type[n]``
    an index into ``type_names``; ``tags[n, k]`` how many tasks of kind ``tag_names[k]`` run
    on node n."""

    free: np.ndarray
    cpu_left: np.ndarray
    memory_left: np.ndarray
    gpus: np.ndarray
    gpu_type: np.ndarray
    type_names: tuple[str, ...]
    cpu_capacity: np.ndarray
    tags: np.ndarray
    tag_names: list[str] = field(default_factory=list)
    # Per node, how many times ``take`` changed it (None: not counted, e.g. a view of a
    # scheduler cycle); score caches trust these instead of comparing contents.
    versions: np.ndarray | None = None
    _type_masks: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict, repr=False)
    # Kept in step with ``free`` (``refresh``, ``take``): per node, the milli-GPUs left in all,
    # the wholly free GPUs, and the most left on one GPU; they make ``fits`` O(nodes).
    total: np.ndarray = field(init=False, repr=False)
    idle: np.ndarray = field(init=False, repr=False)
    most: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.refresh()

    @cached_property
    def scales(self) -> tuple[float, float]:
        """(milli-CPUs, milli-GPUs) of the largest node, to normalise resource vectors
        (0 CPUs when the cluster does not model them)."""
        cpus = self.cpu_capacity[self.cpu_capacity < UNLIMITED]
        return (float(cpus.max()) if len(cpus) else 0.0,
                float(max(int(self.gpus.max(initial=0)), 1) * MILLI))

    def refresh(self) -> None:
        """Recompute the per-node sums after ``free`` changed other than by ``take``."""
        self.total = self.free.sum(axis=1)
        self.idle = (self.free == MILLI).sum(axis=1)
        self.most = self.free.max(axis=1)

    @classmethod
    def empty(cls, cluster: Cluster) -> NodeView:
        """Every GPU, CPU and byte of the cluster free."""
        width = max(int(cluster.node_gpus.max(initial=0)), 1)
        free = np.zeros((cluster.num_nodes, width), dtype=np.int64)
        for node, count in enumerate(cluster.node_gpus.tolist()):
            free[node, :count] = MILLI
        cpus = _units(cluster.node_cpus, MILLI)
        return cls(free, cpus.copy(), _units(cluster.node_memory_gb, 1024),
                   cluster.node_gpus.astype(np.int64), cluster.node_type.copy(),
                   cluster.type_names, cpus, np.zeros((cluster.num_nodes, 0), dtype=np.int64))

    @classmethod
    def of_cycle(cls, state: object, held: Iterable[tuple[Job, Sequence[int]]] = ()
                 ) -> NodeView:
        """A view of a scheduler ``CycleState``: its free shares, resources and, as tags,
        the tasks of ``held`` (jobs and the GPUs they hold)."""
        from dlsched.scheduling.state import CycleState

        assert isinstance(state, CycleState)
        cluster = state.cluster
        view = cls.empty(cluster)
        rows, cols = _gpu_slots(cluster)
        view.free[rows, cols] = np.rint(np.asarray(state.free) * MILLI).astype(np.int64)
        view.refresh()
        if state.resources is not None:
            view.cpu_left = _units(state.resources.cpus, MILLI)
            view.memory_left = _units(state.resources.memory_gb, 1024)
        for job, gpus in held:
            for node, workers in _workers_per_node(cluster, gpus).items():
                view.add_tag(node, Demand.of_job(job, workers).tag)
        return view

    def add_tag(self, node: int, tag: str) -> None:
        if tag == NO_GPU_TAG:
            return
        if tag not in self.tag_names:
            self.tag_names.append(tag)
            self.tags = np.hstack([self.tags, np.zeros((len(self.gpus), 1), dtype=np.int64)])
        self.tags[node, self.tag_names.index(tag)] += 1

    def type_mask(self, demand: Demand) -> np.ndarray:
        """Nodes whose GPU type the demand accepts (cached per type list)."""
        mask = self._type_masks.get(demand.gpu_types)
        if mask is None:
            if demand.gpu_types:
                codes = [i for i, t in enumerate(self.type_names) if t in demand.gpu_types]
                mask = np.isin(self.gpu_type, codes)
            else:
                mask = np.ones(len(self.gpus), dtype=bool)
            self._type_masks[demand.gpu_types] = mask
        return mask

    def fits(self, demand: Demand) -> np.ndarray:
        """Nodes that can host the demand now (GPU type, CPUs, memory and GPUs)."""
        mask = (self.cpu_left >= demand.cpu_milli) & (self.memory_left >= demand.memory_mib)
        if demand.num_gpus == 0:
            return mask
        mask &= self.type_mask(demand)
        if demand.gpu_milli >= MILLI:
            return mask & (self.idle >= demand.num_gpus)
        if demand.num_gpus == 1:
            return mask & (self.most >= demand.gpu_milli)
        return mask & ((self.free >= demand.gpu_milli).sum(axis=1) >= demand.num_gpus)

    def take(self, node: int, gpus: Sequence[int], demand: Demand) -> None:
        """Book the demand on ``node``'s GPUs ``gpus`` (indices within the node)."""
        self.cpu_left[node] -= demand.cpu_milli
        self.memory_left[node] -= demand.memory_mib
        if self.versions is not None:
            self.versions[node] += 1
        if gpus:
            row = self.free[node]
            for gpu in gpus:
                row[gpu] -= demand.gpu_milli
            self.total[node] -= demand.gpu_milli * len(gpus)
            self.idle[node] = int((row == MILLI).sum())
            self.most[node] = int(row.max())
        self.add_tag(node, demand.tag)


def exclusive_gpus(free_row: np.ndarray, count: int) -> list[int]:
    """The lowest-indexed wholly free GPUs (the artifact's ``AllocateExclusiveGpuId``)."""
    return np.flatnonzero(free_row == MILLI)[:count].tolist()


def tightest_gpu(free_row: np.ndarray, milli: int) -> int:
    """The GPU with the least room that still fits ``milli`` (first on ties): best fit."""
    room = np.where(free_row >= milli, free_row, MILLI + 1)
    return int(room.argmin())


def _units(values: np.ndarray, scale: int) -> np.ndarray:
    out = np.where(np.isfinite(values) & (values > 0), np.asarray(values) * scale, UNLIMITED)
    return np.rint(out).astype(np.int64)


def _gpu_slots(cluster: Cluster) -> tuple[np.ndarray, np.ndarray]:
    rows = cluster.gpu_node
    cols = np.arange(cluster.num_gpus) - cluster.node_first_gpu[rows]
    return rows, cols


def _workers_per_node(cluster: Cluster, gpus: Sequence[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for gpu in gpus:
        node = int(cluster.gpu_node[gpu])
        out[node] = out.get(node, 0) + 1
    return out
