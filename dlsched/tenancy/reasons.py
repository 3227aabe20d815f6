"""Why a job waits, as data (Kueue reports these as the Workload's QuotaReserved=False
condition message; here every pending job gets one per cycle, with its place in its queue)."""

from __future__ import annotations

import bisect
import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace


class Reason(enum.Enum):
    UNKNOWN_QUEUE = "its queue is not a local queue or cluster queue of the tenant config"
    NO_FLAVOR = "no flavor of its cluster queue serves its GPU types"
    NO_QUOTA = "no quota in any flavor: the request exceeds what its queue may ever use"
    BORROWING_LIMIT = "would need to borrow beyond the borrowing limit"
    NEEDS_PREEMPTION = "insufficient unused quota and no job may be preempted for it"
    MIN_RUNTIME = "the jobs it could preempt are within their minimum runtime"
    NO_NODE_FITS = "quota reserved but no node fits the gang"
    POLICY_HOLDS = "quota reserved but the scheduling policy holds it back"
    NOT_ALLOCATED = "the allocation policy gave it no GPUs in this round"
    WAITING_FOR_EVICTION = "waiting for preempted jobs to exit"
    BACKOFF = "requeued after an eviction: backing off"
    STRICT_FIFO = "waiting behind the head of its cluster queue (StrictFIFO)"
    RECLAIM_DEFERRED = ("a job admitted in this cycle borrowed from the queue it reclaims "
                        "from: its victims are chosen again at once")


# A job whose quota was reserved and that did not start: no node fits it, or the wrapped
# policy's own rule held it (backfill's reservation, Themis' offers). One kind for what is
# logged when it changes (``TenantAudit.waits``) and for the walk by groups' steady jobs
# (``groups.py``), which log nothing when skipped: a skip cannot tell which of the two a try
# would have met, so a job moving between them is not a change there.
NOT_PLACED = frozenset({Reason.NO_NODE_FITS, Reason.POLICY_HOLDS})


def not_placed(failure: str, policy_plugins: frozenset[str]) -> Reason:
    """Why a job whose quota was reserved did not start, from its failure's text (``[plugin]
    why``, ``Status.__str__``): POLICY_HOLDS where the plugin is one of the wrapped policy's
    own (``policy_plugins``: it holds the job by its rule, though nodes may fit), else
    NO_NODE_FITS (placement, the filters, the gang permit: no node fits)."""
    if not failure.startswith("["):
        return Reason.NO_NODE_FITS
    plugin = failure[1:failure.find("]")]
    return Reason.POLICY_HOLDS if plugin in policy_plugins else Reason.NO_NODE_FITS


@dataclass(frozen=True, slots=True)
class Pending:
    """A pending job's reason from the last cycle and its 0-based position in its queue."""

    job_id: str
    cluster_queue: str
    reason: Reason
    position: int
    detail: str = ""

    def __str__(self) -> str:
        extra = f" ({self.detail})" if self.detail else ""
        return f"{self.reason.value}{extra}; position {self.position} in {self.cluster_queue}"


class PendingBook(Mapping[str, Pending]):
    """One cycle's ``Pending`` per job: those the tenant layer looked at, and, without a
    record of their own, the jobs of a StrictFIFO queue whose head blocked it (the cycle skips
    them, as Kueue looks only at heads; their reason and position are told on demand)."""

    def __init__(self, positions: Mapping[str, tuple[str, int]] | None = None) -> None:
        self.recorded: dict[str, Pending] = {}
        self.positions: Mapping[str, tuple[str, int]] = positions or {}
        # cluster queue -> why the rest of it waits: StrictFIFO behind its head, or a quota
        # reason that a job asking no more had (see ``tenancy/skip.py``), and that job
        self.blocked: dict[str, tuple[Reason, str]] = {}
        self.admitted: set[str] = set()  # started in this cycle: not pending
        # The tenant layer's walk by groups skipped these jobs' tries (``tenancy/groups.py``):
        # job id -> the detail of the failure that told they would fail placement, or None
        self.bulk: Callable[[str], str | None] | None = None
        # The wrapped policy's plugin names: a skipped job's detail names the plugin that
        # failed it, telling POLICY_HOLDS from NO_NODE_FITS (``not_placed``)
        self.policy_plugins: frozenset[str] = frozenset()
        self._admitted_at: dict[str, list[int]] = {}  # cluster queue -> their positions

    def admit(self, job_id: str) -> None:
        self.recorded.pop(job_id, None)
        self.admitted.add(job_id)
        where = self.positions.get(job_id)
        if where is not None:
            bisect.insort(self._admitted_at.setdefault(where[0], []), where[1])

    def _pending_place(self, pending: Pending) -> Pending:
        """Positions count pending jobs only: those admitted ahead of it no longer do."""
        ahead = bisect.bisect_left(self._admitted_at.get(pending.cluster_queue, ()),
                                   pending.position)
        return replace(pending, position=pending.position - ahead) if ahead else pending

    def __setitem__(self, job_id: str, pending: Pending) -> None:
        self.recorded[job_id] = pending

    def _skipped(self, job_id: str) -> Pending | None:
        if self.bulk is None or job_id in self.admitted:
            return None
        where = self.positions.get(job_id)
        detail = self.bulk(job_id) if where is not None else None
        if detail is None:
            return None
        return Pending(job_id, where[0], not_placed(detail, self.policy_plugins), where[1],
                       detail)

    def __getitem__(self, job_id: str) -> Pending:
        found = self.recorded.get(job_id) or self._skipped(job_id)
        if found is not None:
            return self._pending_place(found)
        cq, position = self.positions.get(job_id, ("", 0))
        why = self.blocked.get(cq)
        if why is None or job_id in self.admitted:
            raise KeyError(job_id)
        return self._pending_place(Pending(job_id, cq, why[0], position, why[1]))

    def __contains__(self, job_id: object) -> bool:
        if job_id in self.recorded or self._skipped(job_id) is not None:  # type: ignore[arg-type]
            return True
        where = self.positions.get(job_id)  # type: ignore[call-overload]
        return (where is not None and where[0] in self.blocked
                and job_id not in self.admitted)

    def __iter__(self) -> Iterator[str]:
        yield from self.recorded
        for job_id, (cq, _) in self.positions.items():
            if job_id in self.recorded or job_id in self.admitted:
                continue
            if cq in self.blocked or self._skipped(job_id) is not None:
                yield job_id

    def __len__(self) -> int:
        return sum(1 for _ in self)
