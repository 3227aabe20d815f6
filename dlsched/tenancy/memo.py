"""Per-flavor memo of failed victim searches, for queues with several flavors.

With one flavor, a job that fails on quota is remembered per queue (``plugins._memo_key``) and
may close its queue (``skip.closes_queue``). With several, a larger job may be assigned another
flavor, so neither applies to the queue as a whole. What does carry over is the victim search
*in one flavor*: when a job was assigned flavor ``f`` needing preemption and no victims were
found there, a later job of the same queue that is assigned ``f`` needing preemption, with
usage unchanged since (``QuotaView.version``), finds none either when

- it names the same GPU types, has the same priority and borrows (or not) in ``f`` alike;
- it contests the same resources of ``f`` (``preemption.contested``: the candidates and
  Kueue's passes depend on them);
- it asks at least as much of every resource and was submitted no earlier (its candidates are
  the earlier job's or fewer: same priority, newer-equal ones only fewer; it needs more);
- no job evicted either of them (that rule removes candidates from one job alone);
- the earlier search did not fail for minimum runtimes only (then whether the larger job's
  reason is MIN_RUNTIME depends on a search ignoring them, which the memo does not know).

A hit then gives the reason the search would have given (``assignment.reason``, else
NEEDS_PREEMPTION) and skips both searches; the flavor assignment and the pending reasons are
computed as before, so the schedule and the audit files do not change.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from dlsched.tenancy.assignment import Assignment
from dlsched.tenancy.quota import EPS, Usage
from dlsched.workload.job import Job

MemoKey = tuple


@dataclass(frozen=True, slots=True)
class FailedSearch:
    version: int  # QuotaView.version the search saw
    request: Mapping[str, float]
    submitted: float


def flavor_key(usage: Usage, cq: str, job: Job, request: Mapping[str, float],
               assignment: Assignment) -> MemoKey:
    """The memo key of a job assigned ``assignment`` (mode PREEMPT) in queue ``cq``."""
    flavor = assignment.flavor or ""
    # the resources it contests, as ``preemption.contested`` finds them
    frs = tuple(r for r, v in request.items() if v > usage.available(cq, (flavor, r)) + EPS)
    return (cq, flavor, job.spec.gpu_types, job.spec.priority,
            usage.borrows(cq, flavor, request), frs)


def still_fails(memo: Mapping[MemoKey, FailedSearch], key: MemoKey, version: int,
                request: Mapping[str, float], submitted: float) -> bool:
    """Whether a remembered failure under ``key`` covers this job (module docstring)."""
    failed = memo.get(key)
    return (failed is not None and failed.version == version and submitted >= failed.submitted
            and all(request.get(r, 0.0) >= v for r, v in failed.request.items()))

