"""MIG in the scheduler core: which instance each MIG job holds on which GPU, kept beside the
GPU shares (``docs/mig.md``, "in the core").

A job with ``JobSpec.mig_profile`` runs each worker on a MIG instance of a MIG-capable GPU
(A100, H100). A GPU is in **MIG mode** while it holds at least one instance: the core books
the whole GPU then (its free share is 0, so no whole-GPU or fractional job lands there), and
the instances themselves are booked here, by their slices (``gpu.py``: instances never move;
a layout that needs held slices waits for a drain). The first instance on a GPU takes it, the
last one to go gives it back: ``take`` and ``give`` say how much of the GPU's share changes
hands (1 or 0).

The cycle works on a copy (``copy``): ``place_mig`` chooses a GPU and start slice with the
placement (``placement.py``: ``MigAware`` by default, or ``FirstFit``) and books it in the
copy; the core re-chooses on that GPU when it launches the job (the same layout: the same
choice) and refuses a start that does not fit (``Overbooked``). A large profile (3g and up)
that fits nowhere asks for a **drain** of one busy GPU; the cycle's requests reach the core's
book through ``drain_requests`` (shared by the copies) and ``commit_drains``.

Counted for the report: instances created and destroyed (``reconfigurations``), drains,
compute-slice-seconds held, the peak of slices in use, and MIG jobs placed per profile.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Sequence
from dataclasses import dataclass, field

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.errors import DlschedError
from dlsched.mig.gpu import Instance, MigGpu
from dlsched.mig.placement import MigAware, MigPlacer, placer
from dlsched.mig.profiles import (
    COMPUTE_SLICES,
    MigProfile,
    UnknownMigProfile,
    mig_gpu_type,
    mig_profile,
    profiles_of,
)

LARGE = 3  # 3g and above: a profile that may drain a GPU
EPS = 1e-9


class MigOverbooked(DlschedError):
    """A MIG start whose instance does not fit its GPU (a bug in a policy or placement)."""


@dataclass
class MigStats:
    reconfigurations: int = 0
    drains: int = 0
    slice_seconds: float = 0.0
    peak_slices: int = 0
    placed: Counter[str] = field(default_factory=Counter)


class MigBook:
    """The MIG instances of one cluster. ``gpus`` holds the GPUs in MIG mode (or draining)."""

    def __init__(self, cluster: Cluster, placement: str = "mig-aware") -> None:
        self.cluster = cluster
        families = [mig_gpu_type(node.gpu_type) for node in cluster.nodes]
        self.family = [families[int(n)] for n in cluster.gpu_node]  # per GPU (None: no MIG)
        self.placement = placement
        self.placer: MigPlacer = placer(placement, profiles_of("a100"))
        self.gpus: dict[int, MigGpu] = {}
        self.where: dict[str, tuple[int, Instance]] = {}
        self.evicted: dict[str, tuple[int, Instance]] = {}  # given back in a cycle copy
        self.planned: dict[str, tuple[int, int]] = {}  # job -> (GPU, start) from place_mig
        # This cycle's drain: (GPU, the job it is for), committed by the core after the cycle
        # unless that job started (a trial placement, or a preemption, found it room).
        self.drain_requests: list[tuple[int, str]] = []
        self.stats = MigStats()
        self.slices_used = 0
        self._since = 0.0

    # -- the cycle's copy -----------------------------------------------------------------
    def copy(self) -> MigBook:
        twin = object.__new__(MigBook)
        twin.__dict__.update(self.__dict__)
        twin.gpus = {g: MigGpu(g, list(m.instances), m.draining) for g, m in self.gpus.items()}
        twin.where, twin.evicted, twin.planned = dict(self.where), {}, {}
        twin.stats = MigStats()  # a cycle's tentative moves are not counted
        return twin

    def profile_on(self, gpu: int, name: str) -> MigProfile | None:
        family = self.family[gpu]
        if family is None:
            return None
        try:
            return mig_profile(name, family)
        except UnknownMigProfile:
            return None

    def choose(self, candidates: Sequence[int], name: str) -> tuple[int, int] | None:
        """The GPU and start slice for an instance of ``name`` among ``candidates`` (GPU
        ids that may take it: MIG-capable, in MIG mode or wholly free)."""
        gpus = [self.gpus.get(g) or MigGpu(g) for g in candidates
                if self.profile_on(g, name) is not None]
        if not gpus:
            return None
        profile = self.profile_on(gpus[0].index, name)
        assert profile is not None
        choice = self.placer.choose(gpus, profile)
        return None if choice is None else (choice[0].index, choice[1])

    def request_drain(self, candidates: Sequence[int], name: str, job_id: str = ""
                      ) -> int | None:
        """For a large profile that fits nowhere: ask to drain a busy GPU (MigAware only; one
        at a time, one a cycle); the GPU, or None. The drain takes effect when the core
        commits it after the cycle: a request made while a job is only tried (a victim
        search places and takes back) must not change the cycle's own placements."""
        profile = self.profile_on(candidates[0], name) if candidates else None
        if (profile is None or profile.compute < LARGE
                or not isinstance(self.placer, MigAware)):
            return None
        if self.drain_requests:  # this cycle's drain is chosen: it serves this job too
            gpu_index = self.drain_requests[0][0]
            self.drain_requests.append((gpu_index, job_id))
            return gpu_index
        busy = [self.gpus[g] for g in candidates if g in self.gpus]
        gpu = self.placer.to_drain(busy, lambda _gpu: True)
        if gpu is None:
            return None
        self.drain_requests.append((gpu.index, job_id))
        return gpu.index

    def has_room(self) -> bool:
        """Whether a GPU in MIG mode could still take a new instance."""
        return any(not g.draining and g.compute_used < COMPUTE_SLICES
                   for g in self.gpus.values())

    # -- booking (cycle copies and the core alike) ----------------------------------------
    def take(self, gpu: int, job_id: str, name: str, start: int | None = None,
             launch: bool = False) -> float:
        """Create the job's instance on ``gpu`` (at ``start``, else where it was before an
        eviction in this cycle, else where ``place_mig`` planned it, else the placement's
        choice on that GPU); the share of the GPU that changes hands: 1 if it enters MIG mode,
        else 0."""
        profile = self.profile_on(gpu, name)
        if profile is None:
            raise MigOverbooked(f"GPU {gpu} cannot hold MIG profile {name!r}")
        if job_id in self.where:  # a second worker would orphan the first one's instance
            raise MigOverbooked(f"job {job_id}: a MIG job runs one instance, and it already "
                                f"holds one on GPU {self.where[job_id][0]}")
        start, restore = self._start_for(gpu, job_id, profile, start, launch)
        entering = gpu not in self.gpus
        mig_gpu = self.gpus.setdefault(gpu, MigGpu(gpu))
        if start is None or not mig_gpu.fits(profile, start, restore or launch):
            if entering:
                del self.gpus[gpu]
            raise MigOverbooked(f"job {job_id}: MIG {profile.name} does not fit on GPU {gpu}")
        self.where[job_id] = (gpu, mig_gpu.create(profile, start, job_id, restore or launch))
        self.stats.reconfigurations += 1
        self.stats.placed[profile.name] += 1
        self.slices_used += profile.compute
        self.stats.peak_slices = max(self.stats.peak_slices, self.slices_used)
        return 1.0 if entering else 0.0

    def _start_for(self, gpu: int, job_id: str, profile: MigProfile, start: int | None,
                   launch: bool = False) -> tuple[int | None, bool]:
        """The start slice, and whether it undoes this cycle's eviction of a running job's
        instance (which comes back to its slices, drain or not). ``place_mig``'s fresh plan
        comes first: an evicted record may be a placement this cycle took back (a waiting
        job tried, then undone), whose slices another instance may hold now."""
        record = self.evicted.pop(job_id, None)
        if start is not None:
            return start, False
        planned = self.planned.pop(job_id, None)
        if planned is not None and planned[0] == gpu:
            return planned[1], False
        if record is not None and record[0] == gpu:
            return record[1].start, True
        found = self.gpus.get(gpu)
        # The core launches what the cycle placed: a drain set since stops new placements,
        # not this one (``launch``).
        view = (MigGpu(gpu) if found is None
                else MigGpu(gpu, list(found.instances), found.draining and not launch))
        choice = self.placer.choose([view], profile)
        return (None if choice is None else choice[1]), False

    def give(self, job_id: str, remember: bool = False) -> tuple[int, float]:
        """Destroy the job's instance; its GPU and the share that comes back (1 when the GPU
        leaves MIG mode, else 0). ``remember``: a cycle's eviction, which a restore undoes at
        the same slice."""
        gpu, instance = self.where.pop(job_id)
        mig_gpu = self.gpus[gpu]
        mig_gpu.destroy(job_id)
        if remember:
            self.evicted[job_id] = (gpu, instance)
        self.stats.reconfigurations += 1
        self.slices_used -= instance.profile.compute
        if mig_gpu.idle:
            del self.gpus[gpu]
            return gpu, 1.0
        return gpu, 0.0

    # -- the core's book ------------------------------------------------------------------
    def commit_drains(self, requests: list[tuple[int, str]],
                      started: Container[str] = frozenset()) -> None:
        """Drain the GPU a cycle asked for (if still busy), unless every job it was for
        started in that cycle."""
        for gpu, job_id in requests:
            if job_id in started:
                continue
            mig_gpu = self.gpus.get(gpu)
            if mig_gpu is not None and not mig_gpu.draining:
                mig_gpu.drain()
                self.stats.drains += 1
            break
        requests.clear()

    def advance(self, now: float) -> None:
        """Count compute-slice-seconds held up to ``now``."""
        if now > self._since:
            self.stats.slice_seconds += self.slices_used * (now - self._since)
            self._since = now

    def slot(self, job_id: str) -> tuple[str, int] | None:
        """The job's instance: profile name and start slice (None: no instance)."""
        record = self.where.get(job_id)
        return None if record is None else (record[1].profile.name, record[1].start)

    def capable_gpus(self, nodes: np.ndarray, name: str) -> list[int]:
        """GPUs of ``nodes`` whose type offers profile ``name``."""
        cluster = self.cluster
        out: list[int] = []
        for node in nodes.tolist():
            first = int(cluster.node_first_gpu[node])
            out.extend(g for g in range(first, first + cluster.nodes[node].num_gpus)
                       if self.profile_on(g, name) is not None)
        return out

    def report(self, end: float, window: tuple[float, float] | None = None
               ) -> dict[str, object]:
        """summary.json's ``mig`` section: slices held up to ``end``; their utilization over
        ``window`` (default: 0 to ``end``)."""
        self.advance(end)
        start, stop = window if window is not None else (0.0, end)
        capable = sum(family is not None for family in self.family)
        total = capable * COMPUTE_SLICES * (stop - start)
        return {"placement": self.placement, "mig_gpus": capable,
                "placed_by_profile": dict(sorted(self.stats.placed.items())),
                "compute_slice_seconds": round(self.stats.slice_seconds, 3),
                "slice_utilization": round(self.stats.slice_seconds / total, 6)
                if total > 0 else 0.0,
                "peak_slices_used": self.stats.peak_slices,
                "reconfigurations": self.stats.reconfigurations, "drains": self.stats.drains}
