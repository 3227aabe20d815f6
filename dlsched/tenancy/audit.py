"""What the tenant layer decided, kept for the run's output files (``report/tenant_output.py``):
who evicted whom and why (Kueue's ``Preempted`` condition reasons), the flavor of each start,
how pending reasons changed over time per flavor, and the jobs that can never be admitted.

Everything here grows with decisions (starts, evictions, changes of a pending reason), not with
cycles: a job that waits with the same reasons cycle after cycle adds nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from dlsched.tenancy.quota import EPS
from dlsched.tenancy.reasons import Reason

# Reasons a larger request in the same single flavor cannot escape.
_QUOTA_NEVER = frozenset({Reason.NO_QUOTA, Reason.BORROWING_LIMIT})


@dataclass(frozen=True, slots=True)
class Eviction:
    time: float
    victim: str
    victim_queue: str
    victim_flavor: str
    preemptor: str
    preemptor_queue: str
    reason: str  # InClusterQueue, InCohortReclamation, InCohortReclaimWhileBorrowing, ...
    # "tenants": the tenant layer's victim search chose it (Kueue's rules, no loops);
    # "policy": the wrapped policy's own preemption inside the queue (Tiresias' 2D-LAS,
    # Themis' lease auctions), which may take GPUs back and forth by design
    decided_by: str = "tenants"


@dataclass(frozen=True, slots=True)
class PendingChange:
    """From ``time`` on, ``job_id`` waits in ``flavor`` for ``reason`` (job id empty: the
    rest of the cluster queue, closed for the cycle)."""

    time: float
    job_id: str
    cluster_queue: str
    flavor: str
    reason: Reason
    detail: str = ""


class TenantAudit:
    def __init__(self) -> None:
        self.evictions: list[Eviction] = []
        self.flavors: dict[tuple[str, float], tuple[str, str]] = {}  # (job, start) -> cq, flavor
        self.pending: list[PendingChange] = []
        self._last: dict[str, tuple[tuple[str, Reason], ...]] = {}
        self.never: dict[str, tuple[str, Reason]] = {}  # job -> (cluster queue, reason)
        self._behind: dict[str, str] = {}  # StrictFIFO queue -> the head last logged

    def started(self, job_id: str, now: float, cq: str, flavor: str) -> None:
        self.flavors[(job_id, now)] = (cq, flavor)
        self._last.pop(job_id, None)
        if self._behind.get(cq) == job_id:
            del self._behind[cq]

    def evicted(self, now: float, victim: str, victim_queue: str, victim_flavor: str,
                preemptor: str, preemptor_queue: str, reason: str,
                decided_by: str = "tenants") -> None:
        self.evictions.append(Eviction(now, victim, victim_queue, victim_flavor, preemptor,
                                       preemptor_queue, reason, decided_by))

    def waits(self, now: float, job_id: str, cq: str, reasons: tuple[tuple[str, Reason], ...],
              detail: str = "", never: bool = False, explained: Reason | None = None) -> None:
        """The job's reasons in this cycle, one per flavor, logged when they change;
        ``never``: no change of usage can lift them (its request exceeds what its queue may
        ever use in every flavor that serves it, or its queue is unknown). ``detail`` explains
        the job's own reason (``explained``; None: every row's): a flavor that failed for
        another reason gets none (a100's NEEDS_PREEMPTION read "[placement] needs 2 GPUs, 0
        free", the placement failure of the v100 flavor that reserved its quota)."""
        last = self._last.get(job_id)
        if last == reasons or (last is not None and _kinds(last) == _kinds(reasons)):
            return
        self._last[job_id] = reasons
        self.pending += [PendingChange(now, job_id, cq, flavor, reason,
                                       detail if explained in (None, reason) else "")
                         for flavor, reason in reasons]
        if never:
            self.never.setdefault(job_id, (cq, reasons[0][1]))
        else:
            self.never.pop(job_id, None)

    def closed(self, now: float, cq: str, reason: Reason, detail: str) -> None:
        self.pending.append(PendingChange(now, "", cq, "", reason, detail))

    def behind(self, now: float, cq: str, head: str) -> None:
        """The rest of StrictFIFO queue ``cq`` waits behind ``head``: logged when the head
        changes (or blocks again after a start), as a job's reasons are."""
        if self._behind.get(cq) != head:
            self._behind[cq] = head
            self.closed(now, cq, Reason.STRICT_FIFO, head)


def _kinds(reasons: tuple[tuple[str, Reason], ...]) -> tuple[tuple[str, Reason], ...]:
    """``reasons`` as compared with the last logged: POLICY_HOLDS reads as NO_NODE_FITS (one
    kind, ``reasons.NOT_PLACED``: the walk by groups skips such jobs without telling which)."""
    for _, reason in reasons:
        if reason is Reason.POLICY_HOLDS:
            break
    else:
        return reasons
    return tuple((flavor, Reason.NO_NODE_FITS if reason is Reason.POLICY_HOLDS else reason)
                 for flavor, reason in reasons)


def never_admitted(never: Mapping[str, tuple[str, Reason]],
                   waiting: Iterable[tuple[str, str, Mapping[str, float]]],
                   one_flavor: Callable[[str], bool]) -> dict[str, tuple[str, Reason]]:
    """``never`` (job -> (cluster queue, reason)) plus the ``waiting`` jobs (id, cluster queue,
    request) of a one-flavor queue that ask at least as much of every resource as one of its
    jobs there that exceeds its quota: the queue that job closed (``skip.py``) never tried them,
    yet they can never be admitted either."""
    waiting = list(waiting)
    floors: dict[str, list[tuple[Mapping[str, float], Reason]]] = {}
    for job_id, cq, asked in waiting:
        if job_id in never and never[job_id][1] in _QUOTA_NEVER and one_flavor(cq):
            floors.setdefault(cq, []).append((asked, never[job_id][1]))
    found = dict(never)
    for job_id, cq, asked in waiting:
        for floor, reason in floors.get(cq, ()) if job_id not in found else ():
            if all(asked.get(resource, 0.0) >= amount - EPS
                   for resource, amount in floor.items()):
                found[job_id] = (cq, reason)
                break
    return found
