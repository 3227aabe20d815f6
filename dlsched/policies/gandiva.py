"""Gandiva (Xiao et al., "Gandiva: Introspective Cluster Scheduling for Deep Learning",
OSDI'18), as an allocation plugin that re-decides every job's GPUs once per quantum.

Rules implemented (docs/policies/gandiva.md says what is simplified):

- **Time-slicing when oversubscribed** (§3.1, §4 "over-subscription"): when the active jobs
  ask for more GPUs than the cluster has, jobs take turns at a quantum by suspend-resume: at
  each quantum boundary the jobs that have waited longest since they last ran go first
  (round-robin; never-run jobs by arrival), each taking its whole gang while GPUs remain
  (Gandiva's greedy). When everything fits, nothing rotates.
- **Size affinity** (§4): a starting job prefers a node already hosting a job of its size this
  quantum, so jobs of one size share (and rotate on) the same GPUs; then the tightest node that
  fits its gang; else the roomiest nodes.
- **Migration for locality** (§3.3, §4 "defragmentation"): at a quantum boundary a running job
  spread over several nodes moves (a ``Resize``: checkpoint and restart) onto one node when one
  has room for its whole gang.
- Between quanta (arrivals, completions) running jobs keep their GPUs and waiting jobs fill free
  GPUs in the same round-robin order.

- **Packing** (§3.2, §4 "packing"): at a quantum boundary when oversubscribed, a job left out
  of the rotation shares the GPUs of a scheduled job of its size (half a share each, the same
  GPUs) when their predicted co-located throughput beats time-slicing: ``r_a / T_a + r_b / T_b
  > pack_gain`` (1: time-slicing's sum), ``r`` the measured co-located and ``T`` the isolated
  steps/s of the ``gavel`` model's tables; the best such partner first. Jobs without Gavel job
  types (or a pair Gavel did not measure) are never packed.
- **Introspective unpacking** (§3.2, §4): at every quantum boundary the rates the running
  pairs actually got are compared with time-slicing the same way; a pair that did worse is
  unpacked (each goes back to time-slicing) and never packed again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.perf.gavel_table import GavelThroughputs
from dlsched.perf.model import Placement
from dlsched.policies.colocate import pairable
from dlsched.policies.gandiva_room import GandivaRoom
from dlsched.policies.gandiva_settled import settled_ids
from dlsched.policies.gavel.assign import place_on_nodes
from dlsched.policies.gavel.gpus import exact, name_gpus
from dlsched.policies.gavel.packed_round import PAIR_SHARE, pair_key, running_pairs
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.plugins.filters import allowed_nodes
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import EPS, ClusterSnapshot, CycleState
from dlsched.workload.job import Job

QUANTUM_SECONDS = 60.0
TOLERANCE = 1e-6


class GandivaSlices:
    """Gandiva's time-slicing, affinity and migration as one ``AllocatePlugin``."""

    name = "gandiva"
    static = False

    def __init__(self, quantum: float = QUANTUM_SECONDS, migrate: bool = True,
                 pack: bool = True, pack_gain: float = 1.0) -> None:
        if quantum <= 0:
            raise ValueError("quantum must be > 0 seconds")
        if pack_gain <= 0:
            raise ValueError("pack_gain must be > 0")
        self.quantum, self.migrate = quantum, migrate
        self.pack, self.pack_gain = pack, pack_gain
        self.unpacked: set[tuple[str, str]] = set()  # pairs introspection found worse
        self.packings = 0
        self._gains: dict[tuple, float] = {}
        self._host_gpus: dict[str, tuple[int, ...]] = {}  # this quantum's scheduled jobs
        self._jobs: dict[str, Job] = {}
        self.last_ran: dict[str, float] = {}  # job id -> last cycle time it held GPUs
        # This round's GPUs per placed job; None when every job asks for whole GPUs (the
        # core then picks them on the planned nodes, as it always has).
        self._named: dict[str, tuple[int, ...]] | None = None
        self._quantum_start: float | None = None
        self.migrations = 0
        # Skipped cycles (``changes_nothing``): the answer per (core's running-job changes,
        # down nodes), and the last skipped cycle's time and running jobs.
        self._cluster: Cluster | None = None
        self._settled: tuple[tuple[int, frozenset[int]], tuple[str, ...] | None] | None = None
        self._skipped: tuple[float, tuple[str, ...]] | None = None

    def sort_key(self, state: CycleState | None, job: Job) -> tuple[float, str]:
        return (job.spec.submit_time, job.job_id)

    def turn_order(self, jobs: Sequence[Job]) -> list[Job]:
        """Round-robin: longest since it last ran first; never-run jobs first, by arrival."""
        return sorted(jobs, key=lambda j: (self.last_ran.get(j.job_id, -np.inf),
                                           j.spec.submit_time, j.job_id))

    def changes_nothing(self, running: Mapping[str, Job], changes: int,
                        down_nodes: frozenset[int]) -> bool:
        """Whether a cycle now, with no job waiting, would keep every running job on its GPUs
        (``gandiva_settled``); known again only when the running jobs or down nodes change."""
        if self._cluster is None:
            return False  # no cycle ran yet: the cluster is not known
        key = (changes, down_nodes)
        if self._settled is None or self._settled[0] != key:
            self._settled = key, settled_ids(running.values(), self._cluster, down_nodes,
                                             self.migrate)
        return self._settled[1] is not None

    def skip_cycle(self, now: float) -> None:
        """A cycle that ``changes_nothing`` said is skipped: its quantum boundary still counts,
        and its running jobs ran at ``now`` (``last_ran``, brought up to date by the next
        cycle that runs)."""
        assert self._settled is not None and self._settled[1] is not None
        self._at_boundary(now)
        self._skipped = now, self._settled[1]

    def _at_boundary(self, now: float) -> bool:
        """Whether a quantum starts at ``now`` (then it is the current quantum's start)."""
        boundary = self._quantum_start is None or (
            now >= self._quantum_start + self.quantum - TOLERANCE)
        if boundary:
            self._quantum_start = now
        return boundary

    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        now, snapshot, cluster = state.now, state.snapshot, state.cluster
        self._cluster = cluster
        boundary = self._at_boundary(now)
        if self._skipped is not None:  # they ran through the skipped cycles, to the last
            self.last_ran.update(dict.fromkeys(self._skipped[1], self._skipped[0]))
            self._skipped = None
        for job in snapshot.running:
            self.last_ran[job.job_id] = now
        current = {j.job_id: Assignment.of(j, cluster).nodes for j in snapshot.running}
        # Fractional jobs name their GPUs (the room's choice): the core's own choice, in its
        # order, could give a GPU planned for one to another.
        self._named = None if _whole_only(snapshot) else {}
        if not boundary:
            room = GandivaRoom(cluster, state.free, state.node_free)
            placed = self._place(state, self.turn_order(snapshot.waiting), room, {})
            return {**{j.job_id: exact(j.allocation, cluster.gpu_node, j.shares[0])
                       for j in snapshot.running}, **self._targets(state, placed)}
        self._introspect(state)
        room = GandivaRoom.empty(cluster, snapshot.down_nodes)
        pinned = self._pinned(state, room)
        chosen, left = [], room.total
        for job in self.turn_order([j for j in (*snapshot.waiting, *snapshot.running)
                                    if j.job_id not in pinned]):
            asked = job.spec.num_gpus * _room_share(job)  # in GPUs, fractions summed
            if asked <= left + EPS:
                chosen.append(job)
                left -= asked
        kept = self._keep([j for j in chosen if j.job_id in current], current, room)
        rest = [j for j in chosen if j.job_id not in kept]
        placed = self._place(state, rest, room, _sizes(kept, snapshot.running))
        self.migrations += sum(1 for j in placed if j in current)
        jobs = {j.job_id: j for j in snapshot.running}
        targets = {**{j: self._kept_target(state, jobs[j], n) for j, n in kept.items()},
                   **self._targets(state, placed), **pinned}
        left_out = [j for j in self.turn_order([*snapshot.waiting, *snapshot.running])
                    if j.job_id not in targets]
        if not (self.pack and left_out and isinstance(snapshot.throughput, GavelThroughputs)):
            return targets
        return {**self._packed(state, kept, placed, left_out, pinned), **pinned}

    def _targets(self, state: CycleState, placed: dict[str, tuple[int, ...]]
                 ) -> dict[str, Assignment]:
        """Placed jobs' targets: their nodes, or the GPUs the room named for them."""
        if self._named is None:
            return {j: Assignment(n) for j, n in placed.items()}
        jobs = {j.job_id: j for j in (*state.snapshot.running, *state.snapshot.waiting)}
        return {j: exact(self._named[j], state.cluster.gpu_node, jobs[j].spec.gpu_share)
                for j in placed}

    def _kept_target(self, state: CycleState, job: Job, nodes: tuple[int, ...]) -> Assignment:
        if self._named is None:
            return Assignment(nodes)
        return exact(job.allocation, state.cluster.gpu_node, job.spec.gpu_share)

    def _pinned(self, state: CycleState, room: GandivaRoom) -> dict[str, Assignment]:
        """Running pairs stay packed on their GPUs until introspection unpacks them (§3.2);
        their GPUs leave ``room``."""
        pinned: dict[str, Assignment] = {}
        if not self.pack:
            return pinned
        for pair, gpus in running_pairs(state.snapshot.running).items():
            if pair not in self.unpacked:
                target = exact(gpus, state.cluster.gpu_node, PAIR_SHARE)
                pinned.update(dict.fromkeys(pair, target))
                room.take(gpus, [1.0] * len(gpus))
        return pinned

    # -- packing (§3.2) -------------------------------------------------------------------
    def _packed(self, state: CycleState, kept: dict[str, tuple[int, ...]],
                placed: dict[str, tuple[int, ...]], left_out: list[Job],
                pinned: dict[str, Assignment]) -> dict[str, Assignment]:
        """Every scheduled job on named GPUs, and left-out jobs beside the best partner."""
        cluster, snapshot = state.cluster, state.snapshot
        jobs = {j.job_id: j for j in (*snapshot.running, *snapshot.waiting)}
        fixed = {j: tuple(sorted(jobs[j].allocation)) for j in kept}
        up = np.ones(cluster.num_nodes, dtype=bool)
        up[list(snapshot.down_nodes)] = False
        free = np.repeat(up, cluster.node_gpus)
        free[[g for held in fixed.values() for g in held]] = False
        free[[g for target in pinned.values() for g in target.gpus or ()]] = False
        named = ({j: self._named[j] for j in placed} if self._named is not None else
                 name_gpus(placed, {}, free, cluster.node_first_gpu, cluster.node_gpus))
        gpus = {**fixed, **named}
        targets = {j: exact(g, cluster.gpu_node, jobs[j].spec.gpu_share) for j, g in gpus.items()}
        self._host_gpus, self._jobs = gpus, jobs
        hosts: dict[tuple, list[str]] = {}  # (job type, GPU type, size) -> free hosts
        for job_id in sorted(j for j in gpus if pairable(jobs[j])):
            hosts.setdefault(self._host_class(state, jobs[job_id], gpus[job_id]), []
                             ).append(job_id)
        for guest in filter(pairable, left_out):
            host = self._best_host(state, guest, hosts)
            if host is not None:
                shared = exact(gpus[host], cluster.gpu_node, PAIR_SHARE)
                targets[host] = targets[guest.job_id] = shared
                self.packings += 1
        return targets

    def _host_class(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> tuple:
        types = {state.cluster.type_names[state.cluster.node_type[state.cluster.gpu_node[g]]]
                 for g in gpus}
        kind = types.pop() if len(types) == 1 else None
        return (job.spec.model, job.spec.batch_size, kind, len(gpus))

    def _best_host(self, state: CycleState, guest: Job, hosts: dict[tuple, list[str]]
                   ) -> str | None:
        """A scheduled job of the guest's size whose pair gains most over time-slicing;
        gains are memoized per (job types, GPU type, size)."""
        best, best_gain = None, self.pack_gain
        for key, members in hosts.items():
            allowed = [h for h in members if pair_key(h, guest.job_id) not in self.unpacked]
            if key[3] != guest.spec.num_gpus or key[2] is None or not allowed:
                continue
            memo = (*key, guest.spec.model, guest.spec.batch_size)
            if memo not in self._gains:
                host = allowed[0]
                self._gains[memo] = self._predicted_gain(state, self._jobs[host], guest,
                                                         self._host_gpus[host])
            if self._gains[memo] > best_gain:
                best, best_gain = (key, allowed[0]), self._gains[memo]
        if best is None:
            return None
        hosts[best[0]].remove(best[1])
        return best[1]

    def _predicted_gain(self, state: CycleState, a: Job, b: Job, gpus: tuple[int, ...]
                        ) -> float:
        """``r_a / T_a + r_b / T_b`` on ``gpus`` from the measured co-located table; 0 when
        it has no measurement for the pair (Gandiva packs only what it can judge)."""
        model: GavelThroughputs = state.snapshot.throughput  # type: ignore[assignment]
        placement = _placement(state, gpus)
        if len(set(placement.gpu_types)) != 1:
            return 0.0
        try:
            r_a, r_b = model.colocated_rate(a.spec, b.spec, placement.gpu_types[0],
                                            len(gpus))
            alone = [model.rate(j.spec, placement) for j in (a, b)]
        except KeyError:
            return 0.0
        if min(r_a, r_b, *alone) <= 0:
            return 0.0  # one of them would stall: never worth it
        return r_a / alone[0] + r_b / alone[1]

    def _introspect(self, state: CycleState) -> None:
        """Gandiva §3.2: compare what each running pair got with time-slicing (normalized
        rates summing to 1); a pair that did worse is never packed again."""
        jobs = {j.job_id: j for j in state.snapshot.running}
        model = state.snapshot.throughput
        for pair, gpus in running_pairs(state.snapshot.running).items():
            placement = _placement(state, gpus)
            got = [jobs[j].rate / max(model.rate(jobs[j].spec, placement), 1e-12)
                   for j in pair]
            if sum(got) <= self.pack_gain or min(got) <= 0:
                self.unpacked.add(pair)

    def _keep(self, running: list[Job], current: dict[str, tuple[int, ...]],
              room: GandivaRoom) -> dict[str, tuple[int, ...]]:
        """Running jobs that stay where they are: all of them, except (with ``migrate``) a
        spread job that one node now has room for (§3.3), which is left to be placed."""
        for job in running:
            room.take(job.allocation, _held(job))
        kept = {}
        for job in sorted(running, key=lambda j: (-j.spec.num_gpus, j.job_id)):
            nodes = current[job.job_id]
            if max(job.shares) < job.spec.gpu_share - EPS:  # packed: re-decided (§3.2)
                room.give(job.allocation, _held(job))
                continue
            if self.migrate and len(set(nodes)) > 1:
                room.give(job.allocation, _held(job))
                if int(room.capacity(_room_share(job)).max(initial=0)) >= len(nodes):
                    continue  # moves: placed with the others, on one node
                room.take(job.allocation, _held(job))
            kept[job.job_id] = nodes
        return kept

    def _place(self, state: CycleState, jobs: Sequence[Job], room: GandivaRoom,
               sizes: dict[int, set[int]]) -> dict[str, tuple[int, ...]]:
        """Each job's gang: a node hosting its size first, else the tightest or roomiest;
        only nodes of a GPU type the job can run on (rate above 0). Room is counted in
        workers of the job's share (a quarter-GPU worker fits a GPU with a quarter free)."""
        placed: dict[str, tuple[int, ...]] = {}
        for job in jobs:
            need, share = job.spec.num_gpus, _room_share(job)
            fits = room.capacity(share)
            everywhere = np.flatnonzero(_runnable(state, job))
            same = np.intersect1d(np.array(sorted(sizes.get(need, ())), dtype=np.int64),
                                  everywhere)
            nodes = None
            if len(same) and int(fits[same].max()) >= need:
                nodes = place_on_nodes(need, same, fits)
            if nodes is None:
                nodes = place_on_nodes(need, everywhere, fits)
            if nodes is not None:
                placed[job.job_id] = nodes
                gpus = room.take_on(nodes, share)
                if self._named is not None:
                    self._named[job.job_id] = gpus
                for node in set(nodes):
                    sizes.setdefault(need, set()).add(node)
        return placed


def _whole_only(snapshot: ClusterSnapshot) -> bool:
    """Whether every active job asks for whole GPUs (the room then needs no GPU names)."""
    return all(j.spec.gpu_share >= 1.0 - EPS for j in (*snapshot.running, *snapshot.waiting))


def _room_share(job: Job) -> float:
    """What a worker takes of its GPU in the room: its share; a MIG worker the whole GPU (the
    core books a GPU in MIG mode whole; allocation policies do not choose instances)."""
    return 1.0 if job.spec.mig_profile is not None else job.spec.gpu_share


def _held(job: Job) -> list[float]:
    """What a running job holds of each of its GPUs in the room (a packed pair: half each)."""
    return [1.0] * len(job.shares) if job.spec.mig_profile is not None else list(job.shares)


def _runnable(state: CycleState, job: Job) -> np.ndarray:
    """Node mask: the job's GPU types and pool allow the node (the core's filters' rules) and
    it runs faster than 0 on that node's GPU type at its size."""
    cluster, model = state.cluster, state.snapshot.throughput
    ok = [model.rate(job.spec, Placement.single_node(name, job.spec.num_gpus)) > 0
          for name in cluster.type_names]
    return np.array(ok, dtype=bool)[cluster.node_type] & allowed_nodes(state, job)


def _placement(state: CycleState, gpus: tuple[int, ...]) -> Placement:
    """Where workers on ``gpus`` run, as if alone."""
    cluster = state.cluster
    nodes = tuple(int(cluster.gpu_node[g]) for g in gpus)
    return Placement(tuple(cluster.type_names[cluster.node_type[n]] for n in nodes), nodes)


def _sizes(kept: dict[str, tuple[int, ...]], running: Sequence[Job]) -> dict[int, set[int]]:
    """Gang size -> nodes hosting a kept job of that size (Gandiva's affinity)."""
    size = {job.job_id: job.spec.num_gpus for job in running}
    found: dict[int, set[int]] = {}
    for job_id, nodes in kept.items():
        found.setdefault(size[job_id], set()).update(nodes)
    return found


@register_policy("gandiva")
def gandiva(quantum: float = QUANTUM_SECONDS, migrate: bool = True, pack: bool = True,
            pack_gain: float = 1.0, placement: str = "consolidated") -> Profile:
    """Gandiva (OSDI'18): time-slicing at a quantum when oversubscribed, packing with
    introspective unpacking, size affinity and migration for locality."""
    plugin = GandivaSlices(quantum, migrate, pack, pack_gain)
    return Profile("gandiva", plugin, plugins=(plugin,), placement=placement,
                   round_seconds=quantum, acts_on_running=True)
