"""Why a job waits, as data (Kueue reports these as the Workload's QuotaReserved=False
condition message; here every pending job gets one per cycle, with its place in its queue)."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Reason(enum.Enum):
    UNKNOWN_QUEUE = "its queue is not a local queue or cluster queue of the tenant config"
    NO_FLAVOR = "no flavor of its cluster queue serves its GPU types"
    NO_QUOTA = "no quota in any flavor: the request exceeds what its queue may ever use"
    BORROWING_LIMIT = "would need to borrow beyond the borrowing limit"
    NEEDS_PREEMPTION = "insufficient unused quota and no job may be preempted for it"
    MIN_RUNTIME = "the jobs it could preempt are within their minimum runtime"
    NO_NODE_FITS = "quota reserved but no node fits the gang"
    WAITING_FOR_EVICTION = "waiting for preempted jobs to exit"
    BACKOFF = "requeued after an eviction: backing off"
    STRICT_FIFO = "waiting behind the head of its cluster queue (StrictFIFO)"


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
