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

On a contended cluster most waiting jobs of a queue are alike, and each is assigned over every
flavor in every cycle, each flavor's search a hit of this memo. ``SameAssignment`` keeps, per
cycle, the flavor assignment of a job whose oracle found no victims in any flavor (or was not
asked), under (queue, GPU types, priority, request, usage version). ``assign`` is a function
of the queue, the GPU types, the request, the usage and the oracle's answers; a later job with
the same key gets the same options and assignment when every search the oracle ran for the
earlier job is, for it, a hit of this memo (``still_fails`` on the kept keys, and no job
evicted it): its oracle would answer "no victims" in each of those flavors, as for the earlier
job, with no search and nothing remembered. The pending reasons and audit rows are then
written from these options as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

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



@dataclass(frozen=True, slots=True)
class SameAssignment:
    """A flavor assignment whose preemption oracle found no victims (module docstring)."""

    assignment: Assignment
    seen: tuple[Assignment, ...]  # each flavor's option, as ``assign`` collected them
    keys: Mapping[str, MemoKey]  # flavor -> ``flavor_key`` of each flavor the oracle asked
    # key -> the memo entry last found to cover the kept request (``still_fails``; the usage
    # version is the kept one's): the same entry covers it again for a job submitted no
    # earlier than the entry's
    covered: dict[MemoKey, FailedSearch] = field(default_factory=dict)
