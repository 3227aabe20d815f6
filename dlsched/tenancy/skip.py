"""When one failed job closes its cluster queue for the rest of a cycle.

Kueue looks at one head per cluster queue per scheduling cycle (``pkg/queue`` heads; a
BestEffortFIFO head that is inadmissible is parked and the next workload becomes the head in the
*next* cycle). dlsched tries every job of a BestEffortFIFO queue in a cycle, but once a job fails
on quota, every later job of its queue fails too when it cannot do better:

- it asks at least as much of every resource (the failed job asked the queue's least);
- its queue has one flavor and the failed job named no GPU type (a later job cannot be given
  another flavor; naming a type can only narrow it);
- it has no more preemption candidates: within the queue, a later job has lower or equal
  priority (the queue's order), and "newer equal priority" needs the policy's order to be
  submission order; across queues, borrowWithinCohort only helps a job that borrows, so the
  failed job must already borrow (a larger job then borrows too) or the policy is off; reclaim
  is only to nominal (a larger job is no better off); fair-sharing strategies compare the
  preemptor's share with the job admitted, which only grows with the request;
- no job evicted the failed job (that rule removes candidates from it alone).

Then the rest of the queue is skipped (``dlsched.scheduling.cycle.skip_queue``), which turns the
cycle's cost from one try per pending job into about one per queue when the cluster is full.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from dlsched.tenancy.config import ClusterQueue, WithinQueue
from dlsched.tenancy.quota import EPS, Usage
from dlsched.tenancy.reasons import Reason
from dlsched.workload.job import Job

QUOTA_REASONS = frozenset({Reason.NO_QUOTA, Reason.BORROWING_LIMIT, Reason.NEEDS_PREEMPTION,
                           Reason.MIN_RUNTIME})


def least_requests(jobs: Iterable[Job], queue_of: Callable[[Job], str],
                   request: Callable[[Job], Mapping[str, float]]) -> dict[str, dict[str, float]]:
    """Per cluster queue, the least any of its jobs asks of each resource (0 when a job does
    not ask for it)."""
    least: dict[str, dict[str, float]] = {}
    for job in jobs:
        asked = request(job)
        floor = least.get(queue_of(job))
        if floor is None:
            least[queue_of(job)] = dict(asked)
            continue
        for resource in list(floor):
            floor[resource] = min(floor[resource], asked.get(resource, 0.0))
    return least


def closes_queue(cq: ClusterQueue, job: Job, request: Mapping[str, float], reason: Reason,
                 least: Mapping[str, float] | None, usage: Usage, evicted_by_others: bool,
                 submission_order: bool) -> bool:
    """Whether no later job of ``cq`` can be admitted in this cycle, ``job`` having failed on
    quota with ``reason`` (the rules in the module docstring)."""
    if reason not in QUOTA_REASONS or least is None or evicted_by_others:
        return False
    if len(cq.flavors) != 1 or job.spec.gpu_types:
        return False
    if any(amount > least.get(resource, 0.0) + EPS for resource, amount in request.items()):
        return False
    preemption = cq.preemption
    if (preemption.within_cluster_queue is WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY
            and not submission_order):
        return False
    return not preemption.borrow_within_cohort.enabled or usage.borrows(
        cq.name, cq.flavors[0], request)
