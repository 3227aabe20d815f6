"""One cycle's walk of the Tiresias lane (``preempt_lane.py``): ``bucket_scan.scan_buckets``
and the attempts it makes (``_CycleRun.consider``, ``_try_job``, ``_attempt``) for whole jobs
on any node, on the books of ``lane_books.FreeBooks``.
"""

from __future__ import annotations

import heapq
import sys
from bisect import bisect_right
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from dlsched.scheduling.bucket_scan import SMALLEST_FAILED
from dlsched.scheduling.cycle import _NO_CHANGE, _SMALLER_FAILED_TEXT
from dlsched.scheduling.decisions import CycleResult, HandedBooks, Preempt, Start
from dlsched.scheduling.lane_books import FreeBooks
from dlsched.scheduling.placement import _NO_SINGLE, no_room_text
from dlsched.scheduling.state import ClusterSnapshot
from dlsched.slots import slot_builder
from dlsched.workload.job import Job

if TYPE_CHECKING:
    from dlsched.scheduling.preempt_lane import TiresiasLane

_NEVER = 1 << 62
_NO_SINGLE_TEXT = str(_NO_SINGLE)
# ``Start(...)`` and ``Preempt(...)`` without their frozen ``__init__`` (~10^6 of each on the
# contended Philly table)
_new_start, _new_preempt = slot_builder(Start), slot_builder(Preempt)
# ``CycleResult(...)`` of a lane cycle, one a cycle (~10^6; its ``__dict__`` updated with
# keywords cost ~9.6k instructions, ~3.6k so)
_new_result = slot_builder(CycleResult, ("starts", "preemptions", "reasons", "next_wakeup",
                                         "blocked", "bulk_reasons", "stop_reason", "books"))
_tuple = tuple.__new__  # ``HandedBooks(...)`` without its Python-level ``__new__``


class LaneWalk(FreeBooks):
    """The walk (``bucket_scan.scan_buckets`` and the attempts it makes) on the books of
    ``FreeBooks``: one object for a lane's cluster, its per-cycle fields set afresh by
    ``run`` (the fields that stay are set once)."""

    def __init__(self, lane: TiresiasLane) -> None:
        FreeBooks.__init__(self, lane._layout, lane.largest)  # type: ignore[arg-type]
        self.lane = lane
        self.sort, self.futile = lane.sort, lane.profile.futile  # (its profile: ``lane``'s)
        self.every_node = lane.every_node  # the static mask of a whole job on any node
        self.arrays: tuple | None = None  # the core's read-only books the views are of
        self.node_versions: memoryview | None = None
        self.node_free_view: memoryview | None = None
        self.miss_texts: dict[tuple[int, int], str] = {}  # ``_miss_text``'s, made once each

    def _begin(self, snapshot: ClusterSnapshot) -> None:
        """The cycle's fields: the scratchpad, the books read from the snapshot (through
        memoryviews made once for the core's read-only arrays, the same every cycle:
        sliced, listed and summed without numpy's per-call costs), nothing decided yet.
        The wholly free counts are read as bytes: each node's count (below 256,
        ``_cluster_plain``) is the low byte of its integer, so the bytes at that offset, one
        integer apart, are the counts, copied in C (no int made per node, no list)."""
        arrays = self.arrays
        if (arrays is None or arrays[0] is not snapshot.free
                or arrays[1] is not snapshot.node_free
                or arrays[2] is not snapshot.node_version):
            self.arrays = (snapshot.free, snapshot.node_free, snapshot.node_version)
            counts = memoryview(snapshot.node_free)
            assert snapshot.node_free.dtype.kind in "iu"  # (the core's: whole GPU counts)
            low = 0 if sys.byteorder == "little" else counts.itemsize - 1
            self.free, self.node_free_view, self.node_versions = (
                memoryview(snapshot.free), counts.cast("B")[low::counts.itemsize],
                memoryview(snapshot.node_version))
        self.state = state = self.lane.scratchpad(snapshot)
        self.begin_books(self.node_free_view, state.evicted)  # type: ignore[arg-type]
        self.snapshot = snapshot
        self.miss = _NEVER  # the fewest GPUs a job failed with since the last eviction
        self.versions: int | None = None  # starts and stops on every node, when first asked
        self.starts: list[Start] = []
        self.preemptions: list[Preempt] = []
        self.reasons: dict[str, str] = {}
        self.stop_reason = ""  # ``bucket_scan.stop_reason``: set where the walk stops early

    def run(self, snapshot: ClusterSnapshot, buckets: Any) -> CycleResult:
        self._begin(snapshot)
        bulk = self._scan(buckets)
        wakeup = self.sort.next_wakeup(self.state)
        return _new_result(tuple(self.starts), tuple(self.preemptions), self.reasons, wakeup,
                           {}, bulk, self.stop_reason, _tuple(HandedBooks, (
                               snapshot.free, snapshot.running_changes, self.node_gpus,
                               self.node_free, self.taken, self.whole_before - self.whole,
                               self.moved)))

    def _scan(self, buckets: Any) -> tuple[tuple[Hashable, str], ...]:
        """``scan_buckets`` for jobs of one shape: a bucket is dropped at its first job
        asking at least the known miss, and comes back after an eviction clears it. A
        bucket's name starts with its jobs' GPU count (``Scheduler._bucket_of``). After an
        eviction a job asking more than is free that ``no_victims`` rules out (the last
        queue's heads, the most met) fails here: ``_consider``'s steps for it, inline.
        Returns the dropped buckets' bulk reasons. The known miss is kept in a local too
        (``miss``), read back from ``self.miss`` after each ``_consider`` (which moves it).
        A heap entry is a head's key with its bucket and place after it, one flat tuple
        (Tiresias' keys are (queue, submit time, job id)): a comparison of two entries
        compares their keys' items once, where a key nested in the entry was compared for
        equality first, then again for order (~40 comparisons a cycle)."""
        names, lists, needs, heap = [], [], [], []
        for name, entry in buckets.items():
            keys = entry[0]
            if keys:
                heap.append(keys[0] + (len(names), 0))
                names.append(name)
                lists.append(entry)
                needs.append(name[0])
        heapq.heapify(heap)
        dropped: list[int] = []
        ever_dropped: dict[int, None] = {}
        state, consider, reasons, texts = self.state, self._consider, self.reasons, self.miss_texts
        evicted, no_victims, futile = state.evicted, self.sort.no_victims, self.futile
        pop, replace, miss = heapq.heappop, heapq.heapreplace, self.miss
        while heap:
            _, _, _, n, index = heap[0]
            need = needs[n]
            if need >= miss:
                pop(heap)
                dropped.append(n)
                ever_dropped[n] = None
                continue
            keys, jobs = lists[n]
            job = jobs[index]
            if evicted and need > self.whole and no_victims(state, job):
                # ``_consider`` and a failure's steps (``need`` is below the miss, checked above):
                # ``no_victims`` is pure, asked only here; ``_miss_text``'s kept text
                futile[job.job_id] = None
                reasons[job.job_id] = texts.get((need, self.whole)) or self._miss_text(need)
                miss = self.miss = need
            else:
                if not consider(job, need) and need == 1 and not evicted:
                    # ``_nothing_else_fits``: one GPU on any node failed, nothing evicted
                    self.stop_reason = SMALLEST_FAILED
                    break
                miss = self.miss
                if dropped and miss == _NEVER:  # an eviction cleared the known miss
                    key = keys[index]
                    for m in dropped:
                        m_keys = lists[m][0]
                        at = bisect_right(m_keys, key)
                        if at < len(m_keys):
                            heapq.heappush(heap, m_keys[at] + (m, at))
                    dropped.clear()
            if index + 1 < len(keys):
                replace(heap, keys[index + 1] + (n, index + 1))
            else:
                pop(heap)
        return tuple([(names[n], _SMALLER_FAILED_TEXT) for n in ever_dropped])

    def _consider(self, job: Job, need: int) -> bool:
        """``_CycleRun.consider`` and ``_try_job`` for a whole job on any node. While jobs
        are evicted in this cycle no futility memo is kept (``_futility_key``): a job of the
        last queue (``no_victims``) is told by the free counts (``_victimless_miss``) in
        ``_scan``, which asks ``no_victims`` (pure) before this, where the counts rule the
        job out."""
        if self.state.evicted:
            if need <= self.whole:
                return self._start(job, need, ())
            return self._search(job, need, None)
        prior = self.futile.get(job.job_id)
        if prior is None:
            return self._search(job, need, None) if need > self.whole else self._start(
                job, need, ())
        versions = self.versions
        if versions is None:
            versions = self.versions = sum(self.node_versions)  # type: ignore[arg-type]
        if prior[0] != versions and need > self.whole:
            # starts or stops since: the memo differs whatever its epoch, which the search
            # asks only if it fails (its first step is ``rank_epoch``'s: Tiresias' advance)
            return self._search(job, need, None)
        memo = self._memo(job)
        if memo is not None and memo == prior:
            # The reason from last time, as it was (no plugin prefix, so it does not grow).
            own = self.snapshot.own_reason
            reason = (own(job) if own is not None else job.pending_reason) or _NO_CHANGE
            self.reasons[job.job_id] = reason
            return False
        return self._search(job, need, memo) if need > self.whole else self._start(
            job, need, ())

    def _search(self, job: Job, need: int, memo: tuple | None) -> bool:
        """``_attempt`` of a job asking more than is wholly free: the victim search, and the
        start on the GPUs it frees; else the job fails with the count's reason (as it read
        before the search: a failed search frees nothing). Each victim frees the GPUs it
        holds, so the candidates are asked for with the room missing (``post_filter``'s
        ``room``): none, unread, where the queues below hold too few (most failures). A
        failure's memo (``_memo``) takes its epoch from ``searched_epoch``: ``rank_epoch``
        as ``post_filter`` just read the job's queue (~1.3 failures a cycle on the
        contended Philly table); the failure's steps and the kept text, inline."""
        sort = self.sort
        candidates = sort.post_filter(self.state, job, need - self.whole)
        victims = self.fewest_victims(need, candidates) if candidates else ()
        if victims:
            return self._start(job, need, victims)
        job_id = job.job_id
        if memo is None and not self.state.evicted:
            versions = self.versions
            if versions is None:
                versions = self.versions = sum(self.node_versions)  # type: ignore[arg-type]
            memo = (versions, sort.searched_epoch())
        self.futile[job_id] = memo
        if need < self.miss:
            self.miss = need
        self.reasons[job_id] = self.miss_texts.get((need, self.whole)) or self._miss_text(need)
        return False

    def _start(self, job: Job, need: int, victims: tuple[Job, ...]) -> bool:
        """``_place`` (placement, the gang Permit every whole placement passes, Reserve)
        and ``consider``'s records of the start and its victims."""
        gpus = self.place(need)
        job_id, state = job.job_id, self.state
        state.started[job_id] = gpus
        self.sort.reserve(state, job, gpus)
        self.futile.pop(job_id, None)
        self.starts.append(_new_start(job_id, gpus, (job.spec.gpu_share,) * need))
        if victims:
            reason, preemptions = f"preempted by {job_id}", self.preemptions
            for victim in victims:  # (1-2 a search: a loop, not a comprehension's frame)
                preemptions.append(_new_preempt(victim.job_id, reason))
            self.miss = _NEVER  # evictions may leave spare GPUs a failed job could use
        return True

    def _memo(self, job: Job) -> tuple | None:
        """``cycle._futility_key`` for a whole job on any node: the starts and stops on every
        node (``_version_sum`` over all of them) and Tiresias' ``rank_epoch`` there; None
        while jobs are evicted in this cycle, or when the epoch is None."""
        state = self.state
        if state.evicted:
            return None
        epoch = self.sort.rank_epoch(state, job, self.every_node)
        if epoch is None:
            return None
        if self.versions is None:
            self.versions = sum(self.node_versions)
        return (self.versions, epoch)

    def _miss_text(self, need: int) -> str:
        """``count_miss``'s reason for a whole job on any node asking more than is free, kept
        per (need, free) for the run: ~2 a cycle on the contended Philly table, of a few
        dozen needs and free counts."""
        key = (need, self.whole)
        text = self.miss_texts.get(key)
        if text is None:
            text = self.miss_texts[key] = (_NO_SINGLE_TEXT if need == 1 else
                                       f"[placement] {no_room_text(need, self.whole)}")
        return text
