"""Earliest deadline first (Liu & Layland, JACM 1973), the deadline baseline of the DL
schedulers that target deadlines (ElasticFlow, Gu et al. ASPLOS'23 §6.1; Chronus, Gao et al.
SoCC'21 §6).

Jobs are ordered by absolute deadline; jobs without one (best-effort) come after every job with
one; ties go to the earlier submission, then the lower id. Each job runs at its requested size
(EDF is not elastic). With ``preemptive`` (the default, as in ElasticFlow's baseline) a job that
does not fit evicts running jobs with a later deadline, the latest first; ``min_runtime``
protects a job that has just started. A job whose deadline has passed keeps its place and runs
to completion: the report counts it as a missed deadline (EDF does not drop work).
"""

from __future__ import annotations

import math

import numpy as np

from dlsched.scheduling.plugins.preemption import Preemption, RankRule
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class DeadlineOrder:
    """QueueSort by (deadline, submit time, id); a job without a deadline sorts last."""

    name = "deadline-order"
    static = True  # the key depends on the job alone
    running_static = True  # running jobs too: preemption keeps them sorted (issue 14)
    rank_rule = RankRule("edf", "no later deadline",
                         "a later deadline (none is the latest), or as late and submitted later")

    def __init__(self, min_runtime: float = 0.0) -> None:
        self.min_runtime = min_runtime

    def sort_key(self, state: CycleState | None, job: Job) -> tuple[float, float, str]:
        deadline = job.spec.deadline
        return (math.inf if deadline is None else deadline, job.spec.submit_time, job.job_id)

    def key_now(self, job: Job, now: float) -> tuple[float, float, str]:
        """The key (fixed: ``now`` does not move a deadline; ``Preemption.wait_detail``)."""
        return self.sort_key(None, job)

    def rank_epoch(self, state: CycleState, job: Job, nodes: np.ndarray) -> tuple | None:
        """Ranks never change (static keys): only starts and stops decide the victims, which
        the cycle's futility memo already tracks; protection windows end with time alone."""
        return None if self.min_runtime else ()


@register_policy("edf")
def edf(preemptive: bool = True, min_runtime: float = 0.0,
        placement: str = "consolidated") -> Profile:
    """Earliest deadline first at requested sizes; preempts later-deadline jobs (preemptive)."""
    at_least(0, min_runtime=min_runtime)
    order = DeadlineOrder(min_runtime if preemptive else 0.0)
    plugins = (Preemption(order, min_runtime),) if preemptive else ()
    return Profile("edf", order, plugins=plugins, placement=placement)
