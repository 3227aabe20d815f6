"""The cycle's walk over waiting jobs in a static order, one bucket of alike jobs at a time.

Within one cycle, once a job fails, every later job of the same shape (GPU share and nodes its
static filters allow) asking as many GPUs or more fails too (``_CycleRun._known_miss``). Under
contention most waiting jobs are such known misses, and visiting each one made a cycle cost
O(waiting jobs). Here the core keeps the waiting jobs in buckets (GPU count and static shape,
``bucket_of``), each sorted by the static order; the cycle merges the buckets' heads and drops a
whole bucket at its first known miss, so it visits only the jobs it really tries. The decisions
are those of the job-by-job walk: after evictions clear the known misses, dropped buckets come
back from the position reached.

Reasons: the jobs of a dropped bucket are not written one by one; the cycle reports the bucket
(``CycleResult.bulk_reasons``) and the core resolves a job's reason lazily (``Scheduler.
own_reason``): a waiting job not looked at since its bucket was dropped reads "a job as large
or smaller of the same kind did not fit in this cycle". This is what the walk wrote too, except
for jobs the walk never reached because it stopped early (nothing else could fit): they keep
that true reason instead of an older one. ``scan_bucket_reasons`` also names the buckets the
walk had not finished when it stopped, and why (``FULL_STOP``, ``SMALLEST_FAILED``): reported
as bulk reasons, they replace the empty or older reason of every job it never reached.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

from dlsched.scheduling.placement import static_shape
from dlsched.scheduling.state import EPS
from dlsched.workload.job import Job

if TYPE_CHECKING:
    from dlsched.scheduling.cycle import _CycleRun
    from dlsched.scheduling.profile import Profile

Buckets = Mapping[Hashable, tuple[list[Any], list[Job]]]
_NEVER = 1 << 62
# Why the jobs of a bucket the walk did not reach wait, when it stopped early: the cluster
# was full, or (a preemptive policy) a job ahead asking one GPU of any node failed.
FULL_STOP = "[placement] no GPU free: the cycle stopped once nothing more could start"
SMALLEST_FAILED = ("[placement] a job ahead of it asking one GPU of any node did not fit in "
                   "this cycle")
# Scratch key: the walk's bucket names and heap where it stopped early (one store a stop).
_STOPPED = "bucket-scan:stopped"


def bucket_of(job: Job) -> Hashable:
    """What decides, within one cycle, whether a job fits besides the cluster: its GPU count
    and the spec fields the static filters read (the key of the placement's mask cache)."""
    spec = job.spec
    if spec.asks_beyond_gpus:
        return (spec.num_gpus, spec.gpu_share, spec.gpu_types, spec.pool, spec.model,
                spec.batch_size, spec.cpus_per_gpu, spec.memory_gb_per_gpu, spec.gpu_memory_gb,
                spec.max_per_node, spec.density_group if spec.max_per_node else None)
    return (spec.num_gpus, spec.gpu_share, spec.gpu_types, spec.pool, spec.model,
            spec.batch_size)


def scans_by_bucket(profile: Profile) -> bool:
    """Whether the cycle may walk this profile's waiting jobs by bucket: a static order, no
    PreFilter (it could fail a job before its known miss is told), no filter that narrows nodes
    job by job, no strict FIFO and no plugin told of each failure."""
    return (profile.static_order and not profile.strict_fifo and not profile.pre_filters
            and not profile.dynamic_filters and not profile.blocked and not profile.allocators)


def scan_buckets(run: _CycleRun, buckets: Buckets) -> list[Hashable]:
    """Try the waiting jobs in the static order as ``_CycleRun.in_order`` does, skipping each
    bucket from its first known miss on; returns the buckets dropped (their reasons)."""
    names = [name for name, (_, jobs) in buckets.items() if jobs]
    lists = [buckets[name] for name in names]
    heap = [(keys[0], n, 0) for n, (keys, _) in enumerate(lists)]
    heapq.heapify(heap)
    shapes: list[tuple | None] = [None] * len(lists)
    dropped: list[int] = []
    ever_dropped: dict[int, None] = {}
    state, profile, misses, blocked = run.state, run.profile, run.misses, run.blocked
    preemptive = bool(profile.post_filters)
    while heap:
        key, n, index = heap[0]
        keys, jobs = lists[n]
        job = jobs[index]
        if blocked and job.spec.queue in blocked:
            _advance(heap, keys, n, index)
            continue
        if misses:
            shape = shapes[n]
            if shape is None:
                shape = shapes[n] = static_shape(state, job, profile.filters)
            if job.spec.num_gpus >= misses.get(shape, _NEVER):
                heapq.heappop(heap)
                dropped.append(n)
                ever_dropped[n] = None
                if not preemptive and _full(run):
                    state.scratch[_STOPPED] = (names, heap, FULL_STOP)
                    break  # the walk stops at a known miss once nothing else fits
                continue
        started = run.consider(job)
        if not started and run.placement_failed and run._nothing_else_fits(job):
            # (not preemptive: the cluster is full; preemptive: a 1-GPU job of any node failed)
            state.scratch[_STOPPED] = (names, heap, SMALLEST_FAILED if preemptive else FULL_STOP)
            break
        if dropped and not misses:  # evictions cleared the known misses: dropped come back
            for m in dropped:
                m_keys = lists[m][0]
                at = bisect.bisect_right(m_keys, key)
                if at < len(m_keys):
                    heapq.heappush(heap, (m_keys[at], m, at))
            dropped.clear()
        _advance(heap, keys, n, index)
        if started and not preemptive and dropped and _full(run):
            # The walk would now fail the next job and stop; if that job is a dropped one
            # (its reason is its bucket's), stop here.
            following = min((lists[m][0][at] for m in dropped
                             if (at := bisect.bisect_right(lists[m][0], key)) < len(lists[m][0])),
                            default=None)
            if following is not None and (not heap or following < heap[0][0]):
                state.scratch[_STOPPED] = (names, heap, FULL_STOP)
                break
    return [names[n] for n in ever_dropped]


def scan_bucket_reasons(run: _CycleRun, buckets: Buckets
                        ) -> tuple[list[Hashable], list[Hashable], str]:
    """``scan_buckets``, and where the walk stopped early, the buckets it had not finished
    (still in its heap: a job of theirs it failed keeps its own, newer reason) and why the jobs
    it did not reach wait (``FULL_STOP``, ``SMALLEST_FAILED``; else ``[]`` and ""); reported
    as bulk reasons they replace an empty or older reason."""
    dropped = scan_buckets(run, buckets)
    stopped = run.state.scratch.pop(_STOPPED, None)
    if stopped is None:
        return dropped, [], ""
    names, heap, why = stopped
    unreached = [names[n] for _, n, _ in heap]  # a bucket is in the heap once at most
    return dropped, unreached, why


def stop_reason(run: _CycleRun) -> str:
    """Why the jobs a ``scan_buckets`` walk did not reach wait, if it stopped early
    (``FULL_STOP``, ``SMALLEST_FAILED``), else "": one reason for the whole cycle, which the
    core stamps (``CycleResult.stop_reason``) and shows for every waiting job whose own and
    bucket's reasons are older (``Scheduler.reason_for``): O(1) a cycle, where naming the
    unreached buckets (``scan_bucket_reasons``) cost x1.052 on SJF under contention."""
    stopped = run.state.scratch.pop(_STOPPED, None)
    return "" if stopped is None else stopped[2]


def _advance(heap: list, keys: list[Any], n: int, index: int) -> None:
    if index + 1 < len(keys):
        heapq.heapreplace(heap, (keys[index + 1], n, index + 1))
    else:
        heapq.heappop(heap)


def _full(run: _CycleRun) -> bool:
    state = run.state
    return state.free_whole == 0 and float(state.free.max()) <= EPS and not state.mig_open
