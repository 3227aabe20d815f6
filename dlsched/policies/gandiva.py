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

Not implemented: packing (two jobs on one GPU, §3.2, with its introspective unpacking). The
core rates co-located jobs (``Placement.partners``) but an allocation plugin's targets cannot
yet ask for half a GPU (``allocation_cycle`` gives every worker ``spec.gpu_share``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlsched.policies.gavel.assign import place_on_nodes
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job

QUANTUM_SECONDS = 60.0
TOLERANCE = 1e-6


class GandivaSlices:
    """Gandiva's time-slicing, affinity and migration as one ``AllocatePlugin``."""

    name = "gandiva"
    static = False

    def __init__(self, quantum: float = QUANTUM_SECONDS, migrate: bool = True) -> None:
        if quantum <= 0:
            raise ValueError("quantum must be > 0 seconds")
        self.quantum, self.migrate = quantum, migrate
        self.last_ran: dict[str, float] = {}  # job id -> last cycle time it held GPUs
        self._quantum_start: float | None = None
        self.migrations = 0

    def sort_key(self, state: CycleState | None, job: Job) -> tuple[float, str]:
        return (job.spec.submit_time, job.job_id)

    def turn_order(self, jobs: Sequence[Job]) -> list[Job]:
        """Round-robin: longest since it last ran first; never-run jobs first, by arrival."""
        return sorted(jobs, key=lambda j: (self.last_ran.get(j.job_id, -np.inf),
                                           j.spec.submit_time, j.job_id))

    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        now, snapshot, cluster = state.now, state.snapshot, state.cluster
        boundary = self._quantum_start is None or (
            now >= self._quantum_start + self.quantum - TOLERANCE)
        if boundary:
            self._quantum_start = now
        for job in snapshot.running:
            self.last_ran[job.job_id] = now
        current = {j.job_id: Assignment.of(j, cluster).nodes for j in snapshot.running}
        if not boundary:
            room = state.node_free.astype(np.int64).copy()
            placed = self._place(self.turn_order(snapshot.waiting), room, {})
            return {j: Assignment(n) for j, n in {**current, **placed}.items()}
        room = cluster.node_gpus.astype(np.int64).copy()
        room[list(snapshot.down_nodes)] = 0
        chosen, left = [], int(room.sum())
        for job in self.turn_order([*snapshot.waiting, *snapshot.running]):
            if job.spec.num_gpus <= left:
                chosen.append(job)
                left -= job.spec.num_gpus
        kept = self._keep([j for j in chosen if j.job_id in current], current, room)
        rest = [j for j in chosen if j.job_id not in kept]
        placed = self._place(rest, room, _sizes(kept, snapshot.running))
        self.migrations += sum(1 for j in placed if j in current)
        return {j: Assignment(n) for j, n in {**kept, **placed}.items()}

    def _keep(self, running: list[Job], current: dict[str, tuple[int, ...]],
              room: np.ndarray) -> dict[str, tuple[int, ...]]:
        """Running jobs that stay where they are: all of them, except (with ``migrate``) a
        spread job that one node now has room for (§3.3), which is left to be placed."""
        for job in running:
            np.subtract.at(room, list(current[job.job_id]), 1)
        kept = {}
        for job in sorted(running, key=lambda j: (-j.spec.num_gpus, j.job_id)):
            nodes = current[job.job_id]
            if self.migrate and len(set(nodes)) > 1:
                np.add.at(room, list(nodes), 1)
                if int(room.max(initial=0)) >= len(nodes):
                    continue  # moves: placed with the others, on one node
                np.subtract.at(room, list(nodes), 1)
            kept[job.job_id] = nodes
        return kept

    def _place(self, jobs: Sequence[Job], room: np.ndarray, sizes: dict[int, set[int]]
               ) -> dict[str, tuple[int, ...]]:
        """Each job's gang: a node hosting its size first, else the tightest or roomiest."""
        placed: dict[str, tuple[int, ...]] = {}
        everywhere = np.arange(len(room))
        for job in jobs:
            need = job.spec.num_gpus
            same = np.array(sorted(sizes.get(need, ())), dtype=np.int64)
            nodes = None
            if len(same) and int(room[same].max()) >= need:
                nodes = place_on_nodes(need, same, room)
            if nodes is None:
                nodes = place_on_nodes(need, everywhere, room)
            if nodes is not None:
                placed[job.job_id] = nodes
                for node in set(nodes):
                    sizes.setdefault(need, set()).add(node)
        return placed


def _sizes(kept: dict[str, tuple[int, ...]], running: Sequence[Job]) -> dict[int, set[int]]:
    """Gang size -> nodes hosting a kept job of that size (Gandiva's affinity)."""
    size = {job.job_id: job.spec.num_gpus for job in running}
    found: dict[int, set[int]] = {}
    for job_id, nodes in kept.items():
        found.setdefault(size[job_id], set()).update(nodes)
    return found


@register_policy("gandiva")
def gandiva(quantum: float = QUANTUM_SECONDS, migrate: bool = True,
            placement: str = "consolidated") -> Profile:
    """Gandiva (OSDI'18): time-slicing at a quantum when oversubscribed, size affinity and
    migration for locality (packing not yet)."""
    plugin = GandivaSlices(quantum, migrate)
    return Profile("gandiva", plugin, plugins=(plugin,), placement=placement,
                   round_seconds=quantum, acts_on_running=True)
