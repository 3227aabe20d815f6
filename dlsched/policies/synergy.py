"""Synergy (Mohan et al., "Looking Beyond GPUs for DNN Scheduling on Multi-Tenant Clusters",
OSDI'22): CPUs and host memory per GPU allocated by each job's sensitivity, not in proportion
to its GPUs. Three policies, FIFO as the base policy that picks which jobs get GPUs:

- ``synergy-proportional``: the baseline; every job gets the GPU-proportional share of its
  nodes (a node's CPUs and memory divided by its GPUs, per GPU).
- ``synergy-greedy`` (Synergy-GREEDY): each job asks for its best-case demand from optimistic
  profiling (``perf.synergy``); a job whose demand does not fit anywhere now is skipped, even if
  GPUs are free (the fragmentation the paper reports for GREEDY).
- ``synergy-tune`` (Synergy-TUNE): best-case demand when it fits; otherwise the job's
  GPU-proportional share (its best case if that is smaller in every resource); when GPUs are
  free but their nodes' CPUs or memory are not, the jobs there that hold more than their
  proportional share are brought down to it (jobs on the fewest nodes first, then most CPUs
  per GPU) until the new job fits.
  No job ever gets less than GPU-proportional, so a job is never kept from free GPUs by CPUs
  or memory.

Each cycle (arrivals and completions; also when nothing waits, so freed resources go back):

1. a ledger of free whole GPUs, CPUs and memory per node;
2. running jobs keep their GPUs and their current CPUs and memory;
3. waiting jobs, in arrival order, are placed by the rule above: on one node when one has
   room for the whole gang (the one with the fewest free GPUs), else spread over the nodes with
   the fewest free GPUs first (the placement of Synergy's artifact);
4. (greedy, tune) jobs below their best-case demand, in arrival order, are raised to it where
   their nodes now have room and the profile predicts at least ``UPGRADE_GAIN`` speed-up (as
   Synergy's next round would give it), so resources freed by completions are used.

A job's CPUs and memory change by a ``Resize`` (checkpoint and restart on the same GPUs, paying
the restart overhead), as at a Synergy round's lease renewal. The best-case demand is capped so
that the job's workers on one full node fit (Synergy's artifact caps demands at a server's).
Needs the ``synergy`` throughput model and nodes with ``cpus`` and ``memory_gb``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dlsched.errors import ConfigError
from dlsched.perf.synergy import SynergyThroughputs
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.plugins.filters import allowed_nodes
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import HostShare, Job, JobStatus

MODES = ("proportional", "greedy", "tune")
UPGRADE_GAIN = 1.1
EPS = 1e-9


@dataclass
class Ledger:
    """Free whole GPUs, CPUs and memory (GB) per node, and this cycle's decisions."""

    gpus: np.ndarray
    cpus: np.ndarray
    memory: np.ndarray
    placed: dict[str, tuple[Counter[int], HostShare]]

    def room(self, node: int, host: HostShare) -> int:
        """Workers with ``host`` each that fit on ``node``."""
        fit = int(self.gpus[node])
        if host.cpus > 0:
            fit = min(fit, int((self.cpus[node] + EPS) // host.cpus))
        if host.memory_gb > 0:
            fit = min(fit, int((self.memory[node] + EPS) // host.memory_gb))
        return fit

    def fits_host(self, nodes: Counter[int], host: HostShare) -> bool:
        return all(self.cpus[n] + EPS >= k * host.cpus and self.memory[n] + EPS >= k *
                   host.memory_gb for n, k in nodes.items())

    def book(self, job_id: str, nodes: Counter[int], host: HostShare, gpus: bool) -> None:
        for node, workers in nodes.items():
            self.gpus[node] -= workers if gpus else 0
            self.cpus[node] -= workers * host.cpus
            self.memory[node] -= workers * host.memory_gb
        self.placed[job_id] = (nodes, host)

    def unbook_host(self, job_id: str) -> None:
        nodes, host = self.placed[job_id]
        for node, workers in nodes.items():
            self.cpus[node] += workers * host.cpus
            self.memory[node] += workers * host.memory_gb


class SynergyAllocation:
    """The ``synergy-*`` policies' allocation plugin; see the module docstring."""

    name = "synergy"
    static = False

    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.mode = mode
        self.tuned_down = 0  # peers brought down to their proportional share (TUNE)
        self.skipped = 0  # times a job waited beside enough free GPUs (GREEDY)

    def sort_key(self, state: CycleState | None, job: Job) -> tuple[float, str]:
        return (job.spec.submit_time, job.job_id)

    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        model = state.snapshot.throughput
        if not isinstance(model, SynergyThroughputs):
            raise ConfigError(f"synergy-{self.mode} needs the 'synergy' throughput model "
                              f"(--throughput synergy), not {model.name!r}")
        ledger = self._ledger(state)
        jobs = {j.job_id: j for j in (*state.snapshot.running, *state.snapshot.waiting)}
        running = sorted(state.snapshot.running, key=lambda j: self.sort_key(state, j))
        for job in running:
            nodes = Counter(int(state.cluster.gpu_node[g]) for g in job.allocation)
            ledger.book(job.job_id, nodes, job.host or self._proportional(state, nodes), True)
        waiting = sorted(state.snapshot.waiting, key=lambda j: self.sort_key(state, j))
        for job in waiting:
            self._place(state, ledger, job)
        if self.mode != "proportional":
            self._upgrade(state, ledger, [jobs[j] for j in ledger.placed], model)
        return self._targets(state, ledger, jobs)

    # -- steps ----------------------------------------------------------------------------
    def _ledger(self, state: CycleState) -> Ledger:
        cluster = state.cluster
        bare = [n.name for n in cluster.nodes if n.num_gpus and not (n.cpus and n.memory_gb)]
        if bare:
            raise ConfigError(f"synergy-{self.mode} needs cpus and memory_gb on every GPU node; "
                              f"node {bare[0]} has none")
        gpus = cluster.node_gpus.astype(np.int64).copy()
        gpus[list(state.snapshot.down_nodes)] = 0
        cpus = np.array([n.cpus for n in cluster.nodes], dtype=float)
        memory = np.array([n.memory_gb for n in cluster.nodes], dtype=float)
        return Ledger(gpus, cpus, memory, {})

    def _place(self, state: CycleState, ledger: Ledger, job: Job) -> None:
        need = job.spec.num_gpus
        if self.mode != "proportional":
            best = self._best_case(state, job)
            nodes = _nodes_for(ledger, need, best, _allowed(state, job))
            if nodes is not None:
                ledger.book(job.job_id, nodes, best, True)
                return
            if self.mode == "greedy":
                self.skipped += int(ledger.gpus[_allowed(state, job)].sum()) >= need
                return
        allowed = _allowed(state, job)
        least = self._least_proportional(state, allowed)
        nodes = _nodes_for(ledger, need, least, allowed)
        if nodes is not None:  # room at a proportional share without taking anything back
            share = self._proportional(state, nodes)
            ledger.book(job.job_id, nodes, share if ledger.fits_host(nodes, share) else least,
                        True)
            return
        nodes = _nodes_for(ledger, need, HostShare(0.0, 0.0), allowed)
        if nodes is None:
            return  # not enough free GPUs: waits, whatever the CPUs
        share = self._proportional(state, nodes)
        if self.mode == "tune":
            share = self._fallback(state, job, share)
            self._tune_down(state, ledger, nodes, share)
        if ledger.fits_host(nodes, share):
            ledger.book(job.job_id, nodes, share, True)

    def _tune_down(self, state: CycleState, ledger: Ledger, nodes: Counter[int],
                   share: HostShare) -> None:
        """Bring jobs on ``nodes`` that hold more than their proportional share down to it,
        until ``share`` fits there (Synergy-TUNE): jobs on the fewest nodes first, then most
        CPUs, then most memory per GPU (the artifact's ``_reallocate_peer`` order: a job's
        share is the same on all its nodes, so tuning down one that spans other nodes slows
        all its workers and frees resources where none are needed)."""
        peers = sorted((job_id for job_id, (held, _) in ledger.placed.items()
                        if set(held) & set(nodes)),
                       key=lambda j: (len(ledger.placed[j][0]), -ledger.placed[j][1].cpus,
                                      -ledger.placed[j][1].memory_gb, j))
        for job_id in peers:
            if ledger.fits_host(nodes, share):
                return
            held, host = ledger.placed[job_id]
            fair = self._proportional(state, held)
            if host.cpus <= fair.cpus + EPS and host.memory_gb <= fair.memory_gb + EPS:
                continue
            ledger.unbook_host(job_id)
            ledger.book(job_id, held, HostShare(min(host.cpus, fair.cpus),
                                                min(host.memory_gb, fair.memory_gb)), False)
            self.tuned_down += 1

    def _upgrade(self, state: CycleState, ledger: Ledger, jobs: Sequence[Job],
                 model: SynergyThroughputs) -> None:
        """Raise jobs below their best-case demand to it where their nodes have room."""
        for job in sorted(jobs, key=lambda j: self.sort_key(state, j)):
            nodes, host = ledger.placed[job.job_id]
            best = self._best_case(state, job)
            profile = model.profile(job.spec)
            if profile.throughput(best) < UPGRADE_GAIN * profile.throughput(host):
                continue
            ledger.unbook_host(job.job_id)
            ledger.book(job.job_id, nodes, best if ledger.fits_host(nodes, best) else host,
                        False)

    def _targets(self, state: CycleState, ledger: Ledger, jobs: dict[str, Job]
                 ) -> dict[str, Assignment]:
        gpu_node = state.cluster.gpu_node
        targets = {}
        for job_id, (nodes, host) in ledger.placed.items():
            job = jobs[job_id]
            if job.status is JobStatus.RUNNING:
                targets[job_id] = Assignment(tuple(int(gpu_node[g]) for g in job.allocation),
                                             share=job.shares[0], gpus=job.allocation,
                                             host=host)
            else:
                targets[job_id] = Assignment(tuple(sorted(nodes.elements())), host=host)
        return targets

    # -- demands --------------------------------------------------------------------------
    def _proportional(self, state: CycleState, nodes: Counter[int]) -> HostShare:
        """The GPU-proportional share per GPU: the smallest over the job's nodes."""
        cluster = state.cluster
        return HostShare(min(cluster.nodes[n].cpus / cluster.nodes[n].num_gpus for n in nodes),
                         min(cluster.nodes[n].memory_gb / cluster.nodes[n].num_gpus
                             for n in nodes))

    def _fallback(self, state: CycleState, job: Job, fair: HostShare) -> HostShare:
        """TUNE's demand when the best case does not fit: the best case when it is within the
        proportional share in every resource, else the proportional share."""
        best = self._best_case(state, job)
        within = best.cpus <= fair.cpus + EPS and best.memory_gb <= fair.memory_gb + EPS
        return best if within else fair

    def _least_proportional(self, state: CycleState, allowed: np.ndarray) -> HostShare:
        return self._proportional(state, Counter(int(n) for n in np.flatnonzero(allowed)))

    def _best_case(self, state: CycleState, job: Job) -> HostShare:
        """The job's best-case demand, capped so that its workers on one full node fit."""
        model: SynergyThroughputs = state.snapshot.throughput  # type: ignore[assignment]
        best = model.profile(job.spec).best_case_demand()
        nodes = [n for n in state.cluster.nodes if n.num_gpus]
        per_node = min(job.spec.num_gpus, max(n.num_gpus for n in nodes))
        return HostShare(min(best.cpus, min(n.cpus for n in nodes) / per_node),
                         min(best.memory_gb, min(n.memory_gb for n in nodes) / per_node))


def _allowed(state: CycleState, job: Job) -> np.ndarray:
    """Node mask of the GPU types and pool the job may use."""
    return (state.cluster.node_gpus > 0) & allowed_nodes(state, job)


def _nodes_for(ledger: Ledger, need: int, host: HostShare, allowed: np.ndarray
               ) -> Counter[int] | None:
    """Workers per node for a gang of ``need`` with ``host`` each: one node when one fits
    (the fewest free GPUs), else the nodes with the fewest free GPUs first."""
    candidates = [int(n) for n in np.flatnonzero(allowed)]
    room = {n: ledger.room(n, host) for n in candidates}
    whole = [n for n in candidates if room[n] >= need]
    if whole:
        return Counter({min(whole, key=lambda n: (ledger.gpus[n], n)): need})
    placed: Counter[int] = Counter()
    for node in sorted(candidates, key=lambda n: (ledger.gpus[n], n)):
        take = min(room[node], need - sum(placed.values()))
        if take > 0:
            placed[node] = take
    return placed if sum(placed.values()) == need else None


@register_policy("synergy-proportional")
def synergy_proportional() -> Profile:
    """GPU-proportional CPUs and memory (Synergy OSDI'22's baseline), FIFO."""
    plugin = SynergyAllocation("proportional")
    return Profile("synergy-proportional", plugin, plugins=(plugin,), acts_on_running=True)


@register_policy("synergy-greedy")
def synergy_greedy() -> Profile:
    """Synergy-GREEDY (OSDI'22): best-case CPU and memory demand from optimistic profiling,
    a job that does not fit is skipped; FIFO."""
    plugin = SynergyAllocation("greedy")
    return Profile("synergy-greedy", plugin, plugins=(plugin,), acts_on_running=True)


@register_policy("synergy-tune")
def synergy_tune() -> Profile:
    """Synergy-TUNE (OSDI'22): best-case demand when it fits, else GPU-proportional, taking
    back peers' surplus; no job below proportional; FIFO."""
    plugin = SynergyAllocation("tune")
    return Profile("synergy-tune", plugin, plugins=(plugin,), acts_on_running=True)
