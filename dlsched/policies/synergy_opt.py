"""Synergy-OPT (Mohan et al., OSDI'22, §4.2): the LP-optimal CPU and memory allocation, beside
Synergy-TUNE (``synergy.py``).

The paper's OPT solves, each round, a first LP over the jobs that hold GPUs (the artifact's
``SolveFirstLP``, msr-fiddle/synergy, read not copied): each job ``j`` picks a convex mix
``x[j, k]`` of the points ``k`` of its profile's (CPUs, memory) grid,

- maximize ``sum_j sum_k T_j(k) x[j, k]`` (normalized throughput, 1 at the GPU-proportional
  share),
- ``sum_k x[j, k] = 1`` and ``x >= 0``,
- fair share: ``sum_k T_j(k) x[j, k] >= T_j(GPU-proportional share)`` (no job below it),
- CPUs and memory: ``sum_j workers_j * sum_k cpus(k) x[j, k] <= CPUs`` (and memory).

The artifact states the capacity rows for the whole cluster as one server and then packs the
result onto servers (a second LP and a rounding). Here the base policy (FIFO, as for the
other ``synergy-*`` policies) has already chosen each job's servers, so the capacity rows are
per server, with each job's workers there: the LP's optimum is then the best allocation for
that placement and needs no rounding. A job's CPUs and memory per GPU are its mix's means.

Two terms only break ties: a cost of ``1e-4`` per server's worth of CPUs or memory (the LP
takes the least resources for the same throughput), and for a running job a cost of
``CHURN`` per server's worth of change from what it holds (a change restarts it, as Synergy's
round does; a degenerate LP would otherwise move jobs between equal optima). Solved with
HiGHS (``scipy.optimize.linprog``).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from dlsched.errors import ConfigError
from dlsched.perf.synergy import SensitivityProfile, SynergyThroughputs
from dlsched.policies.synergy import Ledger, SynergyAllocation, _allowed, _nodes_for
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import HostShare, Job, JobStatus

TIE = 1e-4  # per server's worth of CPUs or memory: the least resources for equal throughput
CHURN = 0.02  # per server's worth of change to a running job's CPUs or memory
SLACK = 1e-6  # kept free per server and resource: the solver's feasibility tolerance
FLOOR = 1e-4  # the fair-share floor's give, so that SLACK never makes the LP infeasible


@dataclass
class _Block:
    """One job's variables: its grid, its workers per node, where its columns start."""

    job: Job
    profile: SensitivityProfile
    nodes: Counter[int]
    start: int
    fair: float  # T at the GPU-proportional share of its nodes

    @property
    def size(self) -> int:
        return len(self.profile.cpus) * len(self.profile.memory_gb)

    def grid(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """CPUs, memory and T of each grid point (CPUs major)."""
        cpus, memory = np.meshgrid(self.profile.cpus, self.profile.memory_gb, indexing="ij")
        return cpus.ravel(), memory.ravel(), self.profile.table.ravel()


class SynergyOptAllocation(SynergyAllocation):
    """``synergy-opt``: FIFO gives GPUs; the LP above gives CPUs and memory."""

    def __init__(self) -> None:
        super().__init__("proportional")  # the base's GPU bookkeeping; the mode is ours
        self.mode = "opt"
        self.solves = 0
        self.fallbacks = 0  # LPs HiGHS did not solve (the jobs got the proportional share)

    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        model = state.snapshot.throughput
        if not isinstance(model, SynergyThroughputs):
            raise ConfigError("synergy-opt needs the 'synergy' throughput model "
                              f"(--throughput synergy), not {model.name!r}")
        ledger = self._ledger(state)
        jobs = {j.job_id: j for j in (*state.snapshot.running, *state.snapshot.waiting)}
        none = HostShare(0.0, 0.0)
        for job in sorted(state.snapshot.running, key=lambda j: self.sort_key(state, j)):
            nodes = Counter(int(state.cluster.gpu_node[g]) for g in job.allocation)
            ledger.book(job.job_id, nodes, none, True)
        for job in sorted(state.snapshot.waiting, key=lambda j: self.sort_key(state, j)):
            nodes = _nodes_for(ledger, job.spec.num_gpus, none, _allowed(state, job))
            if nodes is not None:
                ledger.book(job.job_id, nodes, none, True)
        hosts = self.solve(state, ledger, [jobs[j] for j in ledger.placed], model)
        for job_id, host in hosts.items():
            ledger.placed[job_id] = (ledger.placed[job_id][0], host)
        return self._targets(state, ledger, jobs)

    def solve(self, state: CycleState, ledger: Ledger, jobs: list[Job],
              model: SynergyThroughputs) -> dict[str, HostShare]:
        """Each job's CPUs and memory per GPU from the LP (jobs in ``ledger.placed``)."""
        if not jobs:
            return {}
        blocks, start = [], 0
        for job in jobs:
            nodes = ledger.placed[job.job_id][0]
            profile = model.profile(job.spec)
            fair = profile.throughput(self._proportional(state, nodes))
            blocks.append(_Block(job, profile, nodes, start, fair))
            start += blocks[-1].size
        running = [b for b in blocks if b.job.status is JobStatus.RUNNING
                   and b.job.host is not None]
        columns = start + 4 * len(running)  # + (cpu up, cpu down, memory up, memory down)
        from scipy.optimize import linprog  # heavy: only when the policy runs

        result = linprog(*self._program(state, blocks, running, columns), method="highs")
        self.solves += 1
        if result.status != 0:  # not expected (proportional is feasible): stay proportional
            self.fallbacks += 1
            return {b.job.job_id: self._proportional(state, b.nodes) for b in blocks}
        hosts = {}
        for block in blocks:
            x = result.x[block.start:block.start + block.size]
            cpus, memory, _ = block.grid()
            # Rounded down: a mean a hair above what fits would be refused (``Overbooked``).
            hosts[block.job.job_id] = HostShare(_down(float(cpus @ x)),
                                                _down(float(memory @ x)))
        return hosts

    def _program(self, state: CycleState, blocks: list[_Block], running: list[_Block],
                 columns: int) -> tuple:
        cluster = state.cluster
        cpu_scale = max(n.cpus for n in cluster.nodes)
        mem_scale = max(n.memory_gb for n in cluster.nodes)
        cost = np.zeros(columns)
        eq_rows: list[int] = []
        eq_cols: list[int] = []
        eq_vals: list[float] = []
        eq_rhs: list[float] = []
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        rhs: list[float] = []
        capacity: dict[tuple[int, str], int] = {}
        for index, block in enumerate(blocks):
            cpus, memory, throughput = block.grid()
            span = range(block.start, block.start + block.size)
            workers = sum(block.nodes.values())
            cost[block.start:block.start + block.size] = -throughput + TIE * workers * (
                cpus / cpu_scale + memory / mem_scale)
            eq_rows += [index] * block.size
            eq_cols += list(span)
            eq_vals += [1.0] * block.size
            eq_rhs.append(1.0)
            row = len(rhs)  # fair share: -T x <= -T(fair)
            rows += [row] * block.size
            cols += list(span)
            vals += list(-throughput)
            rhs.append(-(block.fair - FLOOR))
            for node, count in block.nodes.items():
                for kind, per_point in (("cpu", cpus), ("mem", memory)):
                    key = (node, kind)
                    if key not in capacity:
                        capacity[key] = len(rhs)
                        free = cluster.nodes[node].cpus if kind == "cpu" else \
                            cluster.nodes[node].memory_gb
                        rhs.append(float(free) - SLACK)  # HiGHS's tolerance
                    rows += [capacity[key]] * block.size
                    cols += list(span)
                    vals += list(count * per_point)
        extra = blocks[-1].start + blocks[-1].size
        for block in running:  # |mean - held| = up - down, costed
            cpus, memory, _ = block.grid()
            span = list(range(block.start, block.start + block.size))
            host = block.job.host
            assert host is not None
            for values, held, scale in ((cpus, host.cpus, cpu_scale),
                                        (memory, host.memory_gb, mem_scale)):
                eq_rows += [len(eq_rhs)] * (block.size + 2)
                eq_cols += [*span, extra, extra + 1]
                eq_vals += [*values, -1.0, 1.0]
                eq_rhs.append(held)
                cost[extra] = cost[extra + 1] = CHURN / scale
                extra += 2
        from scipy import sparse

        a_eq = sparse.csr_matrix((eq_vals, (eq_rows, eq_cols)), shape=(len(eq_rhs), columns))
        a_ub = sparse.csr_matrix((vals, (rows, cols)), shape=(len(rhs), columns))
        return cost, a_ub, np.array(rhs), a_eq, np.array(eq_rhs), (0, None)


def _down(value: float) -> float:
    return math.floor(value * 1e6 + 1e-9) / 1e6


@register_policy("synergy-opt")
def synergy_opt() -> Profile:
    """Synergy-OPT (OSDI'22 §4.2): the LP-optimal CPUs and memory per job (HiGHS), no job
    below its GPU-proportional throughput; FIFO gives GPUs."""
    plugin = SynergyOptAllocation()
    return Profile("synergy-opt", plugin, plugins=(plugin,), acts_on_running=True)
