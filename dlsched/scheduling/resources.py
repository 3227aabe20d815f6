"""Resources beyond GPU compute: host CPUs and memory per node, memory per GPU.

GPU compute is booked in ``free`` (a share of each GPU, see ``state.py``). A job may also ask,
per worker, for ``gpu_memory_gb`` of its GPU's memory and ``cpus_per_gpu`` CPUs and
``memory_gb_per_gpu`` GiB of host memory on the worker's node (``JobSpec``). A ``ResourceBook``
holds what is still free of those three; a capacity the cluster leaves at 0 (not modelled) is
free without limit, so clusters and traces that do not describe a resource run as before.

The book also counts, per node, the workers of each group a job caps (``JobSpec.max_per_node``:
at most that many workers of its ``group`` on one node); a cap works like a resource of
``max_per_node`` slots per node that only the group's workers use.

The scheduler core keeps one book and the placement a copy per cycle; both only move through
``take``/``give``, and the core's ``take`` refuses to book more than is free (``Overbooked``),
so no resource is ever given twice whatever a policy decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.errors import DlschedError
from dlsched.wording import count_of
from dlsched.workload.job import Job, JobSpec

EPS = 1e-9


class Overbooked(DlschedError):
    """A decision would book more of a resource than is free (a bug in a policy)."""


@dataclass
class ResourceBook:
    """Free CPUs and host memory (GiB) per node, free memory (GiB) per GPU; ``inf`` where
    the cluster does not model the resource."""

    cpus: np.ndarray
    memory_gb: np.ndarray
    gpu_memory_gb: np.ndarray
    gpu_node: np.ndarray
    # Workers per node of each capped group now placed (``JobSpec.density_group``); a group
    # leaves when it has none.
    groups: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, cluster: Cluster) -> ResourceBook:
        return cls(_unlimited_where_zero(cluster.node_cpus),
                   _unlimited_where_zero(cluster.node_memory_gb),
                   _unlimited_where_zero(cluster.gpu_memory_gb), cluster.gpu_node)

    def copy(self) -> ResourceBook:
        return ResourceBook(self.cpus.copy(), self.memory_gb.copy(), self.gpu_memory_gb.copy(),
                            self.gpu_node, {k: v.copy() for k, v in self.groups.items()})

    def read_only(self) -> ResourceBook:
        """A view that sees this book's changes and cannot make any (the groups' counts are
        this book's own: a view does not change them)."""
        return ResourceBook(_view(self.cpus), _view(self.memory_gb), _view(self.gpu_memory_gb),
                            self.gpu_node, self.groups)

    def group_room(self, spec: JobSpec) -> np.ndarray | None:
        """Per node, how many more workers the job's group may have there (None: no cap)."""
        if spec.max_per_node <= 0:
            return None
        held = self.groups.get(spec.density_group)
        room = np.full(len(self.cpus), spec.max_per_node, dtype=np.int64)
        return room if held is None else room - held

    def workers_per_node(self, spec: JobSpec) -> np.ndarray:
        """Per node, how many of the job's workers its free CPUs and host memory allow
        (float; ``inf`` where neither limits)."""
        room = np.full(len(self.cpus), np.inf)
        for free, need in ((self.cpus, spec.cpus_per_gpu), (self.memory_gb,
                                                           spec.memory_gb_per_gpu)):
            if need > 0:
                np.minimum(room, np.floor((free + EPS) / need), out=room)
        group = self.group_room(spec)
        if group is not None:
            np.minimum(room, group, out=room)
        return room

    def gpu_memory_fits(self, gpus: slice | np.ndarray, spec: JobSpec) -> np.ndarray:
        """Which of ``gpus`` have room for one worker's GPU memory."""
        return self.gpu_memory_gb[gpus] >= spec.gpu_memory_gb - EPS

    def shortfall(self, gpus: Sequence[int], spec: JobSpec) -> str | None:
        """Why the workers on ``gpus`` (one per entry) do not fit, or None when they do."""
        nodes = self.gpu_node[list(gpus)] if len(gpus) else np.zeros(0, dtype=np.int64)
        per_node = np.bincount(nodes, minlength=len(self.cpus))
        for label, free, need in (("CPUs", self.cpus, spec.cpus_per_gpu),
                                  ("host memory (GiB)", self.memory_gb, spec.memory_gb_per_gpu)):
            if need > 0:
                short = np.flatnonzero(per_node * need > free + EPS)
                if len(short):
                    node = int(short[0])
                    workers = int(per_node[node])
                    return (f"node {node} has {free[node]:g} free {label}, the job's "
                            f"{count_of(workers, 'worker')} there "
                            f"{'needs' if workers == 1 else 'need'} {workers * need:g}")
        group = self.group_room(spec)
        if group is not None:
            short = np.flatnonzero((per_node > 0) & (per_node > group))
            if len(short):
                node = int(short[0])
                running = count_of(spec.max_per_node - group[node], "worker")
                return (f"node {node} already runs {running} of {spec.density_group}, which "
                        f"may have {spec.max_per_node} per node; the job's {per_node[node]} "
                        "there would pass that")
        if spec.gpu_memory_gb > 0:
            per_gpu = np.bincount(np.asarray(gpus, dtype=np.int64),
                                  minlength=len(self.gpu_memory_gb))
            short = np.flatnonzero(per_gpu * spec.gpu_memory_gb > self.gpu_memory_gb + EPS)
            if len(short):
                gpu = int(short[0])
                return (f"GPU {gpu} has {self.gpu_memory_gb[gpu]:g} GiB free, the job needs "
                        f"{per_gpu[gpu] * spec.gpu_memory_gb:g}")
        return None

    def take(self, gpus: Sequence[int], spec: JobSpec, checked: bool = False) -> None:
        """Book one worker per GPU of ``gpus``; ``checked``: refuse (``Overbooked``) what
        does not fit instead of booking it."""
        if checked:
            problem = self.shortfall(gpus, spec)
            if problem is not None:
                raise Overbooked(problem)
        self._shift(gpus, spec, -1.0)

    def give(self, gpus: Sequence[int], spec: JobSpec) -> None:
        self._shift(gpus, spec, 1.0)

    def _shift(self, gpus: Sequence[int], spec: JobSpec, sign: float) -> None:
        gpu_node = self.gpu_node
        for gpu in gpus:
            node = gpu_node[gpu]
            self.cpus[node] += sign * spec.cpus_per_gpu
            self.memory_gb[node] += sign * spec.memory_gb_per_gpu
            self.gpu_memory_gb[gpu] += sign * spec.gpu_memory_gb
        if spec.max_per_node > 0 and len(gpus):
            self._count(gpus, spec.density_group, 1 if sign < 0 else -1)

    def _count(self, gpus: Sequence[int], group: str, sign: int) -> None:
        """A group's workers on ``gpus``' nodes placed (+1) or gone (-1)."""
        held = self.groups.get(group)
        if held is None:
            held = self.groups[group] = np.zeros(len(self.cpus), dtype=np.int64)
        np.add.at(held, self.gpu_node[np.asarray(gpus, dtype=np.int64)], sign)
        if sign < 0 and not held.any():
            del self.groups[group]


def node_room(book: ResourceBook, free: np.ndarray, cluster: Cluster, spec: JobSpec,
              share: float, capacity: np.ndarray) -> np.ndarray:
    """``capacity`` (workers per node by GPU share) narrowed by the job's other demands."""
    if spec.gpu_memory_gb > 0:
        fits = (free >= share - EPS) & book.gpu_memory_fits(slice(None), spec)
        capacity = np.bincount(cluster.gpu_node, weights=fits.astype(np.int64),
                               minlength=cluster.num_nodes).astype(np.int64)
    if spec.cpus_per_gpu > 0 or spec.memory_gb_per_gpu > 0 or spec.max_per_node > 0:
        limit = book.workers_per_node(spec)
        capacity = np.where(limit < capacity, limit, capacity).astype(np.int64)
    return capacity


def most_workers_per_node(cluster: Cluster, spec: JobSpec) -> np.ndarray:
    """Per node, the most workers of the job it could ever host (every resource free)."""
    book = ResourceBook.of(cluster)
    per_gpu = np.ones(cluster.num_gpus)  # a job's workers hold distinct GPUs (``pick_gpus``)
    if spec.gpu_memory_gb > 0:
        np.minimum(per_gpu, np.floor((book.gpu_memory_gb + EPS) / spec.gpu_memory_gb),
                   out=per_gpu)
    per_node = np.bincount(cluster.gpu_node, weights=per_gpu, minlength=cluster.num_nodes)
    # ``workers_per_node`` of an empty book: no group has a worker yet (its cap whole)
    return np.minimum(per_node, book.workers_per_node(spec)).astype(np.int64)


def _unlimited_where_zero(capacity: np.ndarray) -> np.ndarray:
    out = np.asarray(capacity, dtype=np.float64).copy()
    out[out <= 0] = np.inf
    return out


def _view(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


def booked_spec(job: Job) -> JobSpec:
    """What the core books for a job's workers: its spec, with the CPUs and host memory a
    policy gave it (``Job.host``, Synergy) in place of what the spec asks."""
    host = job.host
    if host is None:
        return job.spec
    return replace(job.spec, cpus_per_gpu=host.cpus, memory_gb_per_gpu=host.memory_gb)
