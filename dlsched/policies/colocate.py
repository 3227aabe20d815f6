"""GPU co-location policies: FIFO that packs a job beside a running one when no GPU is free.

Every cycle (arrivals, completions), running jobs keep their GPUs and waiting jobs, in arrival
order, first take whole free GPUs (the tightest node that fits their gang, else the roomiest).
A job left without GPUs may then share the GPUs of a *host*: a running or just-placed job of
the same gang size, on one GPU type, that has its GPUs to itself. The pair runs at half a
share each on the host's GPUs (a host alone at a whole share is restarted at half a share, as
in Gandiva's packing); how fast each runs comes from the run's throughput model (for
prediction: ``perf.interference``, Gavel's measured pairs first, else the utilization model).

Three rules decide which pairs may form (``pack-*`` policies; ``fifo`` is the no-sharing
baseline):

- ``pack-naive``: first fit; any pair that fits in GPU memory (neither job predicted at 0,
  Gavel's out-of-memory mark). What a cluster gets from sharing a GPU without a model.
- ``pack-limit``: first fit under an interference limit: a pair forms only if each job keeps
  at least ``min_speed`` of its speed alone (bin-packing with an interference constraint: the
  usual admission rule of sharing schedulers, here without any gain criterion).
- ``pack-aware``: interference-aware co-location. Pairs form only when co-located throughput
  beats time-slicing, ``f_a + f_b > min_gain`` (Gandiva, Xiao et al. OSDI'18 §3.2: pack when
  the pair's normalized throughput sum exceeds 1), each job keeping ``min_speed``; among all
  (waiting job, host) candidates the pairs are chosen by descending ``f_a + f_b`` (Muri, Zhao
  et al. SIGCOMM'22, groups jobs by a maximum-weight matching (Blossom) on their interleaving
  efficiency; taking pairs greedily by weight, as here, is its 1/2-approximation).

Pairs stay together until one finishes; its partner then runs alone at its half share, and may
host another job. A job that asks for a fraction of a GPU or a MIG instance already shares by
its own request: it takes whole free GPUs at the share it asked for and is never paired.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.perf.interference import InterferenceThroughputs, interference_of
from dlsched.policies.gavel.assign import place_on_nodes
from dlsched.policies.gavel.gpus import exact
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.plugins.filters import allowed_nodes
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import EPS, CycleState
from dlsched.workload.job import Job

PAIR_SHARE = 0.5
RULES = ("naive", "limit", "aware")


@dataclass(frozen=True, slots=True)
class Candidate:
    """A possible pair: the waiting guest, the host and their predicted speeds (vs alone)."""

    guest: Job
    host: Job
    gpus: tuple[int, ...]
    speeds: tuple[float, float]

    @property
    def gain(self) -> float:
        return self.speeds[0] + self.speeds[1]


class CoLocation:
    """The ``pack-*`` policies' allocation plugin; see the module docstring."""

    name = "colocate"
    static = False

    def __init__(self, rule: str, min_speed: float = 0.0, min_gain: float = 0.0) -> None:
        if rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
        if not 0 <= min_speed <= 1:
            raise ValueError(f"min_speed must be in [0, 1], got {min_speed}")
        if min_gain < 0:
            raise ValueError(f"min_gain must be >= 0, got {min_gain}")
        self.rule, self.min_speed, self.min_gain = rule, min_speed, min_gain
        self.packings = 0
        self.packed_pairs: list[tuple[str, str]] = []  # (host, guest) as formed

    def sort_key(self, state: CycleState | None, job: Job) -> tuple[float, str]:
        return (job.spec.submit_time, job.job_id)

    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        gpu_node = state.cluster.gpu_node
        snapshot = state.snapshot
        targets = {j.job_id: exact(j.allocation, gpu_node, j.shares[0])
                   for j in snapshot.running}
        free = state.free >= 1.0 - EPS
        hosts = {j.job_id: (j, tuple(sorted(j.allocation))) for j in _solo(snapshot.running)}
        left_out = []
        for job in sorted(snapshot.waiting, key=lambda j: self.sort_key(state, j)):
            gpus = _whole_gpus(state, job, free)
            if gpus is None:
                if pairable(job):
                    left_out.append(job)
                continue
            targets[job.job_id] = exact(gpus, gpu_node, job.spec.gpu_share)
            if pairable(job):
                hosts[job.job_id] = (job, gpus)
        for pair in self._pairs(state, left_out, hosts):
            shared = exact(pair.gpus, gpu_node, PAIR_SHARE)
            targets[pair.host.job_id] = targets[pair.guest.job_id] = shared
            self.packings += 1
            self.packed_pairs.append((pair.host.job_id, pair.guest.job_id))
        return targets

    def _pairs(self, state: CycleState, guests: Sequence[Job],
               hosts: dict[str, tuple[Job, tuple[int, ...]]]) -> list[Candidate]:
        """The pairs to form: first fit in arrival order (naive, limit), or by descending
        predicted gain (aware)."""
        model = interference_of(state.snapshot.throughput)
        candidates = [c for guest in guests for host, gpus in hosts.values()
                      if (c := self._candidate(state, model, guest, host, gpus)) is not None]
        if self.rule == "aware":
            candidates.sort(key=lambda c: (-c.gain, c.guest.spec.submit_time, c.guest.job_id,
                                           c.host.job_id))
        chosen, used = [], set()
        for c in candidates:
            if c.guest.job_id in used or c.host.job_id in used:
                continue
            used.update((c.guest.job_id, c.host.job_id))
            chosen.append(c)
        return chosen

    def _candidate(self, state: CycleState, model: InterferenceThroughputs, guest: Job,
                   host: Job, gpus: tuple[int, ...]) -> Candidate | None:
        if guest.spec.num_gpus != len(gpus):
            return None
        cluster = state.cluster
        types = {cluster.type_names[cluster.node_type[cluster.gpu_node[g]]] for g in gpus}
        if len(types) != 1:
            return None
        kind = types.pop()
        if guest.spec.gpu_types and kind not in guest.spec.gpu_types:
            return None
        speeds = model.pair_speeds(guest.spec, host.spec, kind, len(gpus))
        if min(speeds) <= 0:
            return None  # does not fit in GPU memory (or cannot run there)
        if self.rule != "naive" and min(speeds) < self.min_speed:
            return None
        if self.rule == "aware" and sum(speeds) <= self.min_gain:
            return None
        return Candidate(guest, host, gpus, speeds)


def pairable(job: Job) -> bool:
    """Whether a job may be paired: it asks for whole GPUs (a fraction or a MIG instance is
    the share the job asked for, which pairing at half a GPU would change)."""
    return job.spec.gpu_share >= 1.0 - EPS and job.spec.mig_profile is None


def _solo(running: Sequence[Job]) -> list[Job]:
    """Running pairable jobs that hold their GPUs alone (a job at half a share whose partner
    left counts: its GPUs have room for one more)."""
    holders: dict[int, int] = {}
    for job in running:
        for gpu in job.allocation:
            holders[gpu] = holders.get(gpu, 0) + 1
    return [j for j in running if j.allocation and pairable(j)
            and all(holders[g] == 1 for g in j.allocation)]


def _whole_gpus(state: CycleState, job: Job, free: np.ndarray) -> tuple[int, ...] | None:
    """Whole free GPUs for the job's gang on the nodes it may use (``free`` is consumed)."""
    cluster = state.cluster
    allowed = allowed_nodes(state, job)
    room = np.bincount(cluster.gpu_node, weights=free, minlength=cluster.num_nodes
                       ).astype(np.int64)
    nodes = place_on_nodes(job.spec.num_gpus, np.flatnonzero(allowed), room)
    if nodes is None:
        return None
    chosen: list[int] = []
    for node in sorted(set(nodes)):
        first = int(cluster.node_first_gpu[node])
        span = np.flatnonzero(free[first:first + int(cluster.node_gpus[node])])
        picked = span[:nodes.count(node)] + first
        free[picked] = False
        chosen.extend(int(g) for g in picked)
    return tuple(sorted(chosen))


def _profile(name: str, plugin: CoLocation) -> Profile:
    return Profile(name, plugin, plugins=(plugin,), placement="consolidated")


@register_policy("pack-naive")
def pack_naive() -> Profile:
    """Naive GPU packing: FIFO, a job that finds no free GPU shares the first running job's
    GPUs that fit in memory, whatever the interference (baseline)."""
    return _profile("pack-naive", CoLocation("naive"))


@register_policy("pack-limit")
def pack_limit(min_speed: float = 0.6) -> Profile:
    """Bin-packing with an interference limit: FIFO, first fit among pairs where each job keeps
    at least ``min_speed`` of its speed alone."""
    return _profile("pack-limit", CoLocation("limit", min_speed=min_speed))


@register_policy("pack-aware")
def pack_aware(min_gain: float = 1.0, min_speed: float = 0.3) -> Profile:
    """Interference-aware co-location (Gandiva OSDI'18 §3.2 packing criterion, Muri SIGCOMM'22
    pairing by efficiency): pairs whose normalized throughput sum beats ``min_gain``, best
    first."""
    return _profile("pack-aware", CoLocation("aware", min_speed=min_speed, min_gain=min_gain))
