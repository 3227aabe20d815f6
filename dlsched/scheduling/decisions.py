"""What a scheduling cycle decides, as data the clock-and-executor side applies."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import MISSING, dataclass, field, fields
from typing import NamedTuple

from dlsched.workload.job import HostShare

# Why a waiting job with no reason of its own waits: a cycle stops once nothing more can start
# (``_CycleRun.in_order``, ``bucket_scan.scan_buckets``) and gives the jobs after that point
# none (or the job came after the last cycle).
NOT_REACHED = "not reached by the last cycle: jobs ahead of it were considered first"


def waiting_reason(reason: str, waiting: bool) -> str:
    """The reason every output shows (jobs.csv, the REST API, ``dlsched jobs``): a waiting
    job's own, else ``NOT_REACHED``; any other job's as it is."""
    return reason or (NOT_REACHED if waiting else "")


@dataclass(frozen=True, slots=True)
class Start:
    """``host``: the CPUs and memory per worker the policy gives the job (None: its spec's)."""

    job_id: str
    gpus: tuple[int, ...]
    shares: tuple[float, ...]
    host: HostShare | None = None


@dataclass(frozen=True, slots=True)
class Resize:
    """A running job moves to other GPUs (more, fewer or elsewhere): it checkpoints and restarts
    there without waiting in the queue."""

    job_id: str
    gpus: tuple[int, ...]
    shares: tuple[float, ...]
    host: HostShare | None = None


@dataclass(frozen=True, slots=True)
class Preempt:
    job_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class Reject:
    """A waiting job the policy refuses for good (admission control, e.g. ElasticFlow's for a
    deadline no allocation can meet): the core fails it with ``reason``."""

    job_id: str
    reason: str


class HandedBooks(NamedTuple):
    """The free books after a cycle's starts and stops, as its walk worked them out (the
    Tiresias lane's ``lane_books.FreeBooks``): the core writes them once, node by node,
    instead of GPU by GPU for each start and stop (issue 14: ~17 GPUs change hands a cycle on
    the contended Philly table, each written by the walk and again by the core). Read only
    by the core whose snapshot the walk read (``free``, the snapshot's array) while its
    running jobs are as they were then (``changes``, the snapshot's ``running_changes``).

    ``node_gpus``: each node the cycle touched, its GPUs' free shares after; ``node_free``:
    every node's wholly free GPUs after (bytes); ``taken``: the GPUs each node gave to
    starts (with the change of its count, the starts and stops that touched it:
    ``node_version``); ``used``: the GPUs taken less those given back; ``moved``: the GPUs
    each stop gave back and each start took, in the walk's order, with their free share
    after (the only GPUs of the touched nodes whose share moved: the core writes those
    alone, in that order, a memoryview item each, where a node's slice cost ~4k
    instructions). A named tuple:
    one is made a cycle, as ``tuple.__new__(HandedBooks, fields)`` (no Python-level call)."""

    free: object
    changes: int | None
    node_gpus: dict[int, list[float]]
    node_free: bytearray
    taken: dict[int, int]
    used: int
    moved: list[tuple[tuple[int, ...], float]]


@dataclass(frozen=True)
class CycleResult:
    """Evictions are applied first, then resizes, then starts. ``reasons`` says why each
    waiting job it looked at still waits; ``blocked`` why the rest of a strict-FIFO queue
    waits. ``bulk_reasons``: buckets of waiting jobs (``bucket_scan.bucket_of``) the cycle
    skipped from a known miss on, with the reason of the jobs in them it did not look at."""

    starts: tuple[Start, ...] = ()
    preemptions: tuple[Preempt, ...] = ()
    reasons: dict[str, str] = field(default_factory=dict)
    next_wakeup: float | None = None
    blocked: dict[str, str] = field(default_factory=dict)
    resizes: tuple[Resize, ...] = ()
    rejections: tuple[Reject, ...] = ()
    bulk_reasons: tuple[tuple[Hashable, str], ...] = ()
    # The walk stopped early (nothing more could start): why the jobs it did not reach wait
    # (``bucket_scan.stop_reason``; "" when it reached every job, or cannot tell).
    stop_reason: str = ""
    # The free books after it, where the walk kept them (``HandedBooks``); not part of the
    # decision (results compare without it)
    books: HandedBooks | None = field(default=None, compare=False, repr=False)

    @classmethod
    def of_starts(cls, starts: tuple[Start, ...]) -> CycleResult:
        """``CycleResult(starts)``, made without the frozen ``__init__`` (one field set at a
        time through ``object.__setattr__``: ~4x the cost; the fast lane makes one per start)."""
        result = object.__new__(cls)
        result.__dict__.update(_DEFAULTS, starts=starts, reasons={}, blocked={})
        return result


_DEFAULTS = {spec.name: spec.default for spec in fields(CycleResult)
             if spec.default is not MISSING}
