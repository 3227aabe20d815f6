"""The MILPs of Chronus and Sia stop on a deterministic node budget, not on wall-clock time:
the same run gives the same schedule however slow the machine, the budget's exhaustion keeps
the best plan found, and the wall-clock safety net, if it ever triggers, is reported (and,
leaving no plan, decides no admission)."""

from __future__ import annotations

import json
import types
import warnings
from pathlib import Path

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job, random_preemptive_jobs, records_of
from test_sia_policy import fast_for, spec, state_of, two_types

from dlsched.policies.elastic import chronus_milp, sia_ilp
from dlsched.policies.elastic.mip_budget import (
    MipBudget,
    SolveLog,
    SolverWallClockWarning,
    Stop,
)
from dlsched.policies.sia import SiaAllocator
from dlsched.report.output import write_run
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import Job, JobStatus
from dlsched.workload.trace import Trace

SLOWDOWN = 1e6  # a machine so loaded that a wall-clock second buys a millionth of the work
OUT_OF_REACH = MipBudget(max_nodes=1000, safety_seconds=1e12)  # even 10^6 times slower


class SlowHighs:
    """A HiGHS solver on a machine ``SLOWDOWN`` times slower: each wall-clock limit it is
    given buys ``1 / SLOWDOWN`` of the work it buys here."""

    def __init__(self, solver: object) -> None:
        self._solver = solver

    def setOptionValue(self, name: str, value: object) -> object:  # noqa: N802 (HiGHS' name)
        if name == "time_limit":
            value = float(value) / SLOWDOWN  # type: ignore[arg-type]
        return self._solver.setOptionValue(name, value)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self._solver, name)


def slow_down(monkeypatch: pytest.MonkeyPatch, module: types.ModuleType) -> None:
    real = module.highs_solver
    monkeypatch.setattr(module, "highs_solver", lambda: SlowHighs(real()))


def chronus_simulator(budget: MipBudget | None = None) -> Simulator:
    """Chronus (leases of 200 s) on 60 jobs with deadlines on 2 x 4 GPUs."""
    policy = build_policy("chronus", {"lease_seconds": "200"})
    if budget is not None:
        policy.plugins[0].budget = budget
    return Simulator(make_cluster(nodes=2, gpus=4),
                     Trace("test", tuple(random_preemptive_jobs(7, with_deadlines=True)[:60])),
                     policy, SimConfig(restart_overhead=0.0))


def chronus_outline(budget: MipBudget | None = None) -> tuple[list[tuple], object]:
    """(job, first start, finish, preemptions) of Chronus's run, and its allocator."""
    sim = chronus_simulator(budget)
    got = records_of(sim)
    outline = [(j, r.first_start, r.finish_time, r.preemptions) for j, r in sorted(got.items())]
    return outline, sim.profile.plugins[0]


def test_chronus_run_is_the_same_on_a_slow_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before the fix, the MILP's 5 s wall-clock limit became 5 us here: HiGHS stopped with no
    # plan and the run differed (70-87 % of deadlines met on chronus-mix2-4h under load).
    quick, allocator = chronus_outline(OUT_OF_REACH)
    slow_down(monkeypatch, chronus_milp)
    slow, slowed = chronus_outline(OUT_OF_REACH)
    assert slow == quick
    assert allocator.solve_log.solves > 0
    assert allocator.solve_log.wall_stops == slowed.solve_log.wall_stops == 0


def sia_allocation(exact: bool = True) -> dict[str, int]:
    cluster = two_types(t4_nodes=2, a100_nodes=2)
    jobs = [Job(spec(f"j{i}", app)) for i, app in enumerate(
        ["imagenet", "cifar10", "ncf", "imagenet", "cifar10", "ncf", "imagenet", "cifar10"])]
    allocator = SiaAllocator(perf_params=fast_for("imagenet"), exact=exact)
    allocator.budget = OUT_OF_REACH
    got = allocator.allocate(state_of(cluster, jobs))
    return {job: a.num_workers for job, a in sorted(got.items())}


def test_sia_exact_allocation_is_the_same_on_a_slow_machine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    quick = sia_allocation()
    slow_down(monkeypatch, sia_ilp)
    assert sia_allocation() == quick


# 40 jobs of 1-7 GPUs, 1-3 leases within 2-5 slots, 13 GPUs: HiGHS needs more than its root
# node to prove the best plan.
GPUS = np.array([3, 4, 5, 7, 1, 1, 5, 7, 2, 2, 7, 3, 2, 5, 2, 3, 4, 4, 1, 1, 7, 5, 7, 4, 5, 2,
                 3, 5, 1, 2, 1, 3, 7, 1, 3, 3, 7, 2, 4, 2])
NEED = np.array([1, 3, 1, 1, 2, 2, 1, 3, 3, 3, 1, 3, 1, 2, 3, 1, 3, 1, 1, 3, 2, 2, 1, 1, 2, 2,
                 2, 3, 2, 2, 3, 3, 2, 1, 3, 2, 3, 2, 2, 1])
HORIZON = np.array([3, 4, 5, 5, 2, 4, 5, 3, 3, 5, 4, 4, 4, 4, 5, 5, 2, 2, 4, 5, 2, 4, 5, 5, 5, 2,
                    4, 5, 3, 2, 3, 2, 2, 5, 4, 5, 5, 5, 3, 3])
WEIGHT, CAPACITY = np.ones(40), 13


def test_lease_milp_budget_exhaustion_keeps_the_best_plan_found() -> None:
    log = SolveLog()
    y, first = chronus_milp.lease_milp(GPUS, NEED, HORIZON, WEIGHT, CAPACITY,
                                       budget=MipBudget(1), log=log)
    assert dict(log.counts()) == {"mip_solves": 1, "mip_budget_stops": 1, "mip_wall_stops": 0}
    # HiGHS' incumbent at the root: a plan within capacity, no better than the optimum
    assert int(GPUS[first].sum()) <= CAPACITY and not (first & ~y).any()
    assert int((GPUS * NEED)[y].sum()) <= CAPACITY * int(HORIZON.max())
    best, _ = chronus_milp.lease_milp(GPUS, NEED, HORIZON, WEIGHT, CAPACITY, log=log)
    assert log.budget_stops == 1 and y.sum() <= best.sum()
    again = chronus_milp.lease_milp(GPUS, NEED, HORIZON, WEIGHT, CAPACITY, budget=MipBudget(1))
    assert again[0].tolist() == y.tolist() and again[1].tolist() == first.tolist()


def test_no_plan_decides_no_admission(monkeypatch: pytest.MonkeyPatch) -> None:
    # A solve that ends with no plan at all (here: the safety net before HiGHS started) gives
    # None; Chronus then decides no admission: the new SLO job is neither admitted nor refused
    # for good (it runs best effort, tried again next lease), the running admitted job keeps
    # its GPUs. Before, "nothing scheduled" refused the new job and best effort took its GPUs.
    monkeypatch.setattr(chronus_milp, "run_budgeted", lambda *args: Stop.WALL)
    assert chronus_milp.lease_milp(GPUS, NEED, HORIZON, WEIGHT, CAPACITY) is None
    plugin = build_policy("chronus", {"lease_seconds": "100"}).plugins[0]
    held = Job(make_job("held").gpus(2).work(150).deadline(1000).build())
    held.set_status(JobStatus.RUNNING)
    held.allocation, held.shares = (0, 1), (1.0, 1.0)
    plugin.admitted.add("held")
    new = Job(make_job("new").at(1).gpus(2).work(100).deadline(500).build())
    short = Job(make_job("short").at(1).gpus(2).work(10).build())  # best effort, least left
    state = cycle_state(make_cluster(nodes=1, gpus=4), used={0: 1.0, 1: 1.0}, running=[held],
                        waiting=[new, short], now=1.0)
    assert set(plugin.allocate(state)) == {"held", "short"}
    assert "new" not in plugin.admitted and "new" not in plugin.rejected


def test_wall_clock_safety_net_is_counted_and_warned(monkeypatch: pytest.MonkeyPatch) -> None:
    slow_down(monkeypatch, chronus_milp)  # 300 s becomes 0.3 ms: the net triggers
    log = SolveLog()
    with pytest.warns(SolverWallClockWarning, match="may depend on the machine's load"):
        for _ in range(2):  # one warning, two counts
            chronus_milp.lease_milp(GPUS, NEED, HORIZON, WEIGHT, CAPACITY, log=log)
    assert (log.solves, log.wall_stops) == (2, 2)


def test_run_reports_the_wall_clock_stops(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    slow_down(monkeypatch, chronus_milp)
    sim = chronus_simulator()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SolverWallClockWarning)
        result = sim.run()
    write_run(result, tmp_path)
    counts = json.loads((tmp_path / "summary.json").read_text())["solver"]
    assert counts["mip_wall_stops"] > 0 and counts["mip_solves"] >= counts["mip_wall_stops"]
