"""The per-cycle view of the world: an immutable snapshot and a mutable scratchpad over it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.perf.model import ThroughputModel
from dlsched.scheduling.journal import RunningJournal
from dlsched.scheduling.resources import ResourceBook, booked_spec
from dlsched.workload.job import Job, JobSpec

FULL = 1.0
EPS = 1e-9
_WHOLE = FULL - EPS  # a free share at least this is a whole free GPU


@dataclass(frozen=True)
class ClusterSnapshot:
    """The cluster as the scheduler core sees it at ``now``. ``free[g]`` is GPU g's free share.
    ``node_version[n]`` counts the starts and stops that touched node n (for memos).

    ``running`` and ``waiting`` hold the core's job objects, which policies must only read;
    ``running`` may be a live view of the core's table (it does not change during a cycle).
    ``by_queue``: with a static order, each tenant queue's waiting jobs in that order.
    """

    cluster: Cluster
    now: float
    free: np.ndarray
    node_free: np.ndarray
    node_version: np.ndarray
    running: Collection[Job]
    waiting: tuple[Job, ...]
    throughput: ThroughputModel
    down_nodes: frozenset[int] = frozenset()
    by_queue: Mapping[str, Sequence[Job]] = field(default_factory=dict)
    has_fractional: bool = True  # whether any job asks for a fraction of a GPU
    # With a static order: the waiting jobs by ``bucket_scan.bucket_of``, each bucket's
    # (static keys, jobs) sorted; empty when the cycle walks ``waiting`` job by job.
    buckets: Mapping[Hashable, tuple[list[Any], list[Job]]] = field(default_factory=dict)
    # A waiting job's reason as the core resolves it (None: ``job.pending_reason``).
    own_reason: Callable[[Job], str] | None = None
    # Free CPUs, host memory and GPU memory (resources.py); None while no job asks for them.
    resources: ResourceBook | None = None
    # The core's MIG instances (dlsched/mig/book.py); None while no job asks for MIG.
    mig: Any = None
    # The core's count of changes to its running jobs (starts, stops, rates, attempt starts):
    # equal counts in two snapshots mean the same running jobs at the same rates. None:
    # unknown (a snapshot built by hand): a memo of the running jobs must look at them.
    running_changes: int | None = None
    # Which jobs those changes touched (``journal.RunningJournal``); None: unknown.
    journal: RunningJournal | None = None

    def __post_init__(self) -> None:
        # Read-only views: the core does not change its arrays while a cycle runs.
        # A read-only array passed in (the core keeps such views of its books) is kept as is;
        # that is the case of every cycle, so it is tested first, without a loop.
        if not (_read_only(self.free) and _read_only(self.node_free)
                and _read_only(self.node_version)):
            for name in ("free", "node_free", "node_version"):
                value = getattr(self, name)
                if not _read_only(value):
                    view = np.asarray(value).view()
                    view.flags.writeable = False
                    object.__setattr__(self, name, view)
        if not self.by_queue and self.waiting:  # built by hand: group the waiting jobs
            object.__setattr__(self, "by_queue", _ByQueue(self.waiting))


# A core snapshot's waiting queue and its count of changes, while ``waiting`` is not read
LIVE_QUEUE, LIVE_CHANGES = "_live_queue", "_live_changes"


class _SortedAtFirstRead:
    """``ClusterSnapshot.waiting`` of a core snapshot whose queue keeps no whole order: the
    snapshot holds the queue instead (``WaitingQueue.order_at``), sorted at the first read into
    the instance's ``waiting``, which every later read finds first (a descriptor without
    ``__set__``: the dataclass' own ``waiting`` is an instance value, as before). A
    descriptor, not ``__getattr__``: a class with ``__getattr__`` has none of its attribute
    reads specialised by the interpreter, and the lane reads the snapshot's ~10^7 times."""

    def __get__(self, snapshot: ClusterSnapshot | None, owner: type | None = None) -> Any:
        if snapshot is None:
            return self
        fields = snapshot.__dict__
        if LIVE_CHANGES not in fields:
            raise AttributeError("'ClusterSnapshot' object has no attribute 'waiting'")
        waiting = fields["waiting"] = fields[LIVE_QUEUE].order_at(fields[LIVE_CHANGES])
        return waiting


ClusterSnapshot.waiting = _SortedAtFirstRead()  # type: ignore[assignment]


def core_snapshot(fields: dict[str, Any], grouped: bool = False) -> ClusterSnapshot:
    """``ClusterSnapshot(**fields)`` for the core's cycle (``Scheduler.snapshot``): ``fields``
    names every field, its arrays already read-only views. The frozen ``__init__`` sets each
    of the 18 fields through ``object.__setattr__``; this fills the instance's dict at once
    (a snapshot a cycle: ~10^6 of them on a contended Philly run). ``__post_init__``'s one
    step that such fields still need is kept: a queue without a static order has no
    ``by_queue`` of its own (``grouped``: it has, the core's)."""
    snapshot = _new(ClusterSnapshot)
    snapshot.__dict__.update(fields)
    if not grouped and not fields["by_queue"] and fields["waiting"]:
        snapshot.__dict__["by_queue"] = _ByQueue(fields["waiting"])
    return snapshot


_new = object.__new__


class _ByQueue(Mapping[str, Sequence[Job]]):
    """The waiting jobs by ``JobSpec.queue``, grouped when first read (a cycle that does not
    walk queue heads never reads them: no pass over every waiting job)."""

    def __init__(self, waiting: Sequence[Job]) -> None:
        self._waiting = waiting
        self._groups: dict[str, list[Job]] | None = None

    def _grouped(self) -> dict[str, list[Job]]:
        if self._groups is None:
            groups: dict[str, list[Job]] = {}
            for job in self._waiting:
                groups.setdefault(job.spec.queue, []).append(job)
            self._groups = groups
        return self._groups

    def __getitem__(self, queue: str) -> Sequence[Job]:
        return self._grouped()[queue]

    def __iter__(self) -> Iterator[str]:
        return iter(self._grouped())

    def __len__(self) -> int:
        return len(self._grouped())


@dataclass
class CycleState:
    """The scratchpad of one cycle: GPUs reserved so far, evictions, per-plugin data.

    ``free`` starts as a copy of the snapshot's and changes as jobs are placed or evicted, so
    later jobs in the same cycle see earlier decisions. ``node_free`` and the whole-free count
    behind ``free_whole`` change with it (only through ``take``, ``give_back`` and ``evict``).
    """

    snapshot: ClusterSnapshot
    free: np.ndarray
    node_free: np.ndarray
    evicted: dict[str, Job] = field(default_factory=dict)
    started: dict[str, tuple[int, ...]] = field(default_factory=dict)
    scratch: dict[str, Any] = field(default_factory=dict)
    # This cycle's copy of the snapshot's resource book (None: no job asks beyond GPUs).
    resources: ResourceBook | None = None
    mig: Any = None  # this cycle's copy of the snapshot's MIG book (None: no MIG job)
    layout: Layout = field(init=False, repr=False)
    # ``free_whole`` = _whole_base + _whole_change; the base is summed only when first asked
    # (preemptive policies never ask), the change is kept by every take and give-back.
    _whole_base: int | None = field(default=None, init=False, repr=False)
    _whole_change: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        self.layout = layout_of(self.snapshot.cluster)
        if self.resources is None and self.snapshot.resources is not None:
            self.resources = self.snapshot.resources.copy()
        if self.mig is None and self.snapshot.mig is not None:
            self.mig = self.snapshot.mig.copy()

    @classmethod
    def begin(cls, snapshot: ClusterSnapshot) -> CycleState:
        free = snapshot.free.copy()
        if not snapshot.down_nodes:
            return cls(snapshot, free, snapshot.node_free.copy())
        for node in snapshot.down_nodes:
            free[_node_slice(snapshot.cluster, node)] = 0.0
        return cls(snapshot, free, whole_free_per_node(snapshot.cluster, free))

    @property
    def mig_open(self) -> bool:
        """Whether a GPU in MIG mode (booked whole) still has free slices for new instances
        (``dlsched/mig/book.py``): a cluster with no free share may still take MIG jobs."""
        return self.mig is not None and self.mig.has_room()

    def books_beyond_gpus(self, job: Job) -> bool:
        """Whether this cycle must book the job's CPUs, host memory or GPU memory."""
        return self.resources is not None and job.spec.asks_beyond_gpus

    @property
    def cluster(self) -> Cluster:
        return self.snapshot.cluster

    @property
    def now(self) -> float:
        return self.snapshot.now

    @property
    def free_whole(self) -> int:
        """Wholly free GPUs in the cluster."""
        if self._whole_base is None:  # node_free changes only with _whole_change
            self._whole_base = int(self.node_free.sum()) - self._whole_change
        return self._whole_base + self._whole_change

    def capacity(self, share: float) -> np.ndarray:
        """Per node: how many workers needing ``share`` of a GPU each could still be placed."""
        if share >= FULL - EPS:
            return self.node_free
        fits = (self.free >= share - EPS).astype(np.int64)
        return np.bincount(self.cluster.gpu_node, weights=fits,
                           minlength=self.cluster.num_nodes).astype(np.int64)

    def capacity_of(self, node: int, share: float) -> int:
        """Workers needing ``share`` that still fit on one node."""
        if share >= FULL - EPS:
            return int(self.node_free[node])
        return int(np.count_nonzero(self.free[_node_slice(self.cluster, node)] >= share - EPS))

    def take(self, gpus: Sequence[int], share: float, spec: JobSpec | None = None) -> None:
        """Book ``share`` of each GPU and, given the job's ``spec``, its other resources (a MIG
        job: its instance, and the whole GPU if it enters MIG mode, ``dlsched/mig/book.py``)."""
        free, node_free, gpu_node = self.free, self.node_free, self.layout.gpu_node
        if spec is not None and spec.mig_profile is not None and self.mig is not None:
            for gpu in gpus:
                share = self.mig.take(gpu, spec.job_id, spec.mig_profile)
                self._whole_change += shift_free(free, node_free, gpu_node, gpu, -share)
            return
        change = 0
        for gpu in gpus:  # ``shift_free(..., -share)``, inlined (a call per GPU costs more)
            old = free.item(gpu)
            new = old - share
            new = FULL if new > FULL else (0.0 if new < 0.0 else new)
            free[gpu] = new
            if old >= _WHOLE and new < _WHOLE:
                node_free[gpu_node[gpu]] -= 1
                change -= 1
            elif old < _WHOLE and new >= _WHOLE:  # a negative share gives back
                node_free[gpu_node[gpu]] += 1
                change += 1
        self._whole_change += change
        if spec is not None and self.resources is not None and spec.asks_beyond_gpus:
            self.resources.take(gpus, spec)

    def give_back(self, gpus: Sequence[int], shares: Sequence[float],
                  spec: JobSpec | None = None) -> None:
        free, node_free, gpu_node = self.free, self.node_free, self.layout.gpu_node
        if spec is not None and spec.mig_profile is not None and self.mig is not None:
            gpu, share = self.mig.give(spec.job_id, remember=True)
            self._whole_change += shift_free(free, node_free, gpu_node, gpu, share)
            return
        for gpu, share in zip(gpus, shares, strict=True):
            self._whole_change += shift_free(free, node_free, gpu_node, gpu, share)
        if spec is not None and self.resources is not None and spec.asks_beyond_gpus:
            self.resources.give(gpus, spec)

    def evict(self, job: Job) -> None:
        self.evicted[job.job_id] = job
        self.give_back(job.allocation, job.shares, booked_spec(job))

    def write_books(self, free: Sequence[float], node_free: Sequence[int],
                    whole_change: int) -> None:
        """Every GPU's free share and every node's whole-free count as kept elsewhere for a
        while (the allocation cycle's ledger, on Python lists), with how the count of wholly
        free GPUs changed meanwhile."""
        self.free[:] = free
        self.node_free[:] = node_free
        self._whole_change += whole_change


def shift_free(free: np.ndarray, node_free: np.ndarray, gpu_node: Sequence[int], gpu: int,
               delta: float) -> int:
    """Add ``delta`` to one GPU's free share (clamped to 0..1), keeping its node's count of
    wholly free GPUs in step; returns how that count changed (-1, 0 or 1). The core and each
    cycle's scratchpad both keep books this way."""
    old = free.item(gpu)  # a Python float: scalar arithmetic on numpy values is slower
    new = old + delta
    new = FULL if new > FULL else (0.0 if new < 0.0 else new)
    free[gpu] = new
    was_whole = old >= FULL - EPS
    if was_whole == (new >= FULL - EPS):
        return 0
    change = -1 if was_whole else 1
    node_free[gpu_node[gpu]] += change
    return change


def whole_free_per_node(cluster: Cluster, free: np.ndarray) -> np.ndarray:
    whole = (free >= FULL - EPS).astype(np.int64)
    return np.bincount(cluster.gpu_node, weights=whole, minlength=cluster.num_nodes).astype(
        np.int64)


@dataclass(frozen=True)
class Layout:
    """A cluster's GPU layout as Python lists (indexing them one element at a time is several
    times faster than indexing numpy arrays): each GPU's node; each node's first GPU, GPU
    count and NVLink domain size. Built once per cluster (``layout_of``); read only."""

    gpu_node: list[int]
    first_gpu: list[int]
    gpus: list[int]
    nvlink_domain: list[int]


# id(cluster) -> (cluster, its layout); holding the cluster keeps its id from being reused.
_LAYOUTS: dict[int, tuple[Cluster, Layout]] = {}


def layout_of(cluster: Cluster) -> Layout:
    cached = _LAYOUTS.get(id(cluster))
    if cached is None or cached[0] is not cluster:
        if len(_LAYOUTS) > 64:
            _LAYOUTS.clear()
        layout = Layout(cluster.gpu_node.tolist(), cluster.node_first_gpu.tolist(),
                        cluster.node_gpus.tolist(), [n.nvlink_domain for n in cluster.nodes])
        cached = _LAYOUTS[id(cluster)] = (cluster, layout)
    return cached[1]


def _read_only(value: object) -> bool:
    return isinstance(value, np.ndarray) and not value.flags.writeable


def _node_slice(cluster: Cluster, node: int) -> slice:
    start = int(cluster.node_first_gpu[node])
    return slice(start, start + int(cluster.node_gpus[node]))
