"""A deterministic budget for HiGHS' branch and bound, and the log of the solves it cut short.

A simulation must follow from its inputs and seed alone. HiGHS' ``time_limit`` counts
wall-clock seconds, so a MILP stopped by it returns whatever the search had reached when the
machine's load let it stop: Chronus on ``chronus-mix2-4h`` met 70–87 % of deadlines in four
runs of the same code under a 5 s limit. The budget here counts branch-and-bound nodes
(HiGHS ``mip_max_nodes``, the deterministic stand-in for time its developers suggest,
ERGO-Code/HiGHS#3133). HiGHS' search is deterministic, so a model stops at the same node with
the same incumbent on any machine under any load; a stop by the node budget ends with model
status ``kSolutionLimit`` and the best solution found so far (each policy documents what it
does with it).

A wall-clock limit remains only as a safety net against a pathological model (``safety_seconds``,
generous: far beyond what the node budget takes). If it ever triggers, the result may depend on
the machine's load, and the run says so: a ``SolverWallClockWarning`` at the first such stop,
and its count in the run's summary (``solver`` in summary.json, from ``SolveLog.counts``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from enum import Enum
from typing import Any


class SolverWallClockWarning(RuntimeWarning):
    """A solver stopped on its wall-clock safety net: the run's result may depend on load."""


class Stop(Enum):
    """How a budgeted solve ended."""

    FINISHED = "finished"  # optimal, infeasible or otherwise decided by the solver itself
    BUDGET = "budget"  # the node budget ran out (deterministic)
    WALL = "wall"  # the wall-clock safety net (load-dependent)


@dataclass(frozen=True)
class MipBudget:
    """``max_nodes``: HiGHS' ``mip_max_nodes``; ``safety_seconds``: its ``time_limit``, a safety
    net only (reported when it triggers)."""

    max_nodes: int
    safety_seconds: float = 300.0

    def __post_init__(self) -> None:
        if self.max_nodes < 1:
            raise ValueError(f"max_nodes must be >= 1, got {self.max_nodes}")
        if not self.safety_seconds > 0:
            raise ValueError(f"safety_seconds must be > 0, got {self.safety_seconds}")


@dataclass
class SolveLog:
    """Counts of one policy's budgeted solves and of those cut short, by cause."""

    solves: int = 0
    budget_stops: int = 0
    wall_stops: int = 0

    def counts(self) -> tuple[tuple[str, int], ...]:
        """``(name, count)`` pairs as the run's summary reports them; none before a solve."""
        if not self.solves:
            return ()
        return (("mip_solves", self.solves), ("mip_budget_stops", self.budget_stops),
                ("mip_wall_stops", self.wall_stops))


def run_budgeted(highs: Any, budget: MipBudget, log: SolveLog | None, what: str) -> Stop:
    """Run the model loaded in ``highs`` under ``budget``; count it in ``log``. ``what``
    names the solve in the warning the safety net gives."""
    highspy_status = _status_enum()
    highs.setOptionValue("mip_max_nodes", int(budget.max_nodes))
    highs.setOptionValue("time_limit", float(budget.safety_seconds))
    highs.run()
    status = highs.getModelStatus()
    stop = (Stop.WALL if status == highspy_status.kTimeLimit else
            Stop.BUDGET if status == highspy_status.kSolutionLimit else Stop.FINISHED)
    if log is not None:
        log.solves += 1
        log.budget_stops += stop is Stop.BUDGET
        log.wall_stops += stop is Stop.WALL
    if stop is Stop.WALL and (log is None or log.wall_stops == 1):
        warnings.warn(f"{what}: HiGHS stopped on its {budget.safety_seconds:g} s wall-clock "
                      f"safety net before its budget of {budget.max_nodes} nodes: this run's "
                      "result may depend on the machine's load", SolverWallClockWarning,
                      stacklevel=2)
    return stop


def _status_enum() -> type:
    from dlsched.lazy import lazy_import

    return lazy_import("highspy").HighsModelStatus
