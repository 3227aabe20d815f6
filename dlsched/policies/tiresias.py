"""Tiresias (Gu et al., NSDI'19): discretized two-dimensional least-attained-service (2D-LAS).

Rules implemented (paper §3.2, "scheduling with partial information"):
- A job's attained service is GPUs x time it has run (2D: spatial and temporal).
- K priority queues split by attained-service thresholds; a job starts in queue 0 and is demoted
  when its attained service crosses the next threshold. Higher queues go first; within a queue,
  waiting jobs are ordered FIFO by submission time.
- A waiting job preempts running jobs of lower queues only: a job of a higher-priority queue
  preempts jobs of lower ones, and within a queue jobs run FIFO by when they started (§3.2),
  so a running job keeps its GPUs against a waiting job of its own queue. The
  authors' simulator does the same (``run_sim.py``'s dlas scheduling moves a queue's waiting
  jobs behind its running ones). ``same_queue_preemption=True`` ranks a queue strictly by
  submission time instead: a waiting job also preempts running jobs of its own queue submitted
  after it (dlsched's default before 2026-12-04).
- Starvation (the paper's PROMOTEKNOB; 0 disables it), as the authors' simulator
  (SymbioticLab/Tiresias ``simulator/run_sim.py``, ``dlas_sim_jobs(gputime, solve_starvation)``)
  applies it: a waiting job of a queue below 0 whose time waited since its last promotion (waits
  before it first ran since then not counted) reaches ``promote_knob`` times the time it has run
  since then is promoted back to queue 0, and both counts start again from 0 (its service too).
It needs no job duration (non-clairvoyant). A cycle is scheduled for the next demotion or
promotion time, so queue changes take effect when they happen.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping

import numpy as np

from dlsched.policies.tiresias_index import RunningByQueue
from dlsched.scheduling.plugins.preemption import protection_ends
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState
from dlsched.wording import count_of
from dlsched.workload.job import Job, JobStatus

DEFAULT_THRESHOLDS = (3600.0,)
SERVICE_TOLERANCE = 1e-6  # GPU-seconds
_RUNNING = JobStatus.RUNNING
_WAITING = (JobStatus.PENDING, JobStatus.PREEMPTED)  # ``JobStatus.is_waiting``, a call less
PRUNE_FLOOR = 1024  # promotion entries kept before dead ones are dropped (``_prune_promotions``)


class DiscretizedLas:
    """QueueSort, PostFilter (preemption), Reserve and wake-ups for 2D-LAS with queue
    thresholds in GPU-seconds."""

    name = "tiresias-2dlas"
    # A waiting job's queue is fixed while it waits, but for one change: a starving job is
    # promoted to queue 0 (once, at a time known when it starts waiting). The core keeps
    # the waiting queue sorted and re-files the jobs ``key_changes`` names. (A class
    # attribute: CPython 3.11 keeps an instance's attributes as shared-key values for up to
    # 29 names; past that every attribute read, write and method call of it takes a slower,
    # unspecialized path, issue 14. Tiresias' own are read ~10^2 times a cycle.)
    static = True
    # Since when cycles are quiet (``_may_sleep``), and the demotions popped since: set on the
    # instance once a quiet cycle is met (the tenant layer's; class defaults otherwise, for
    # the attribute count as ``static``'s)
    _quiet_since: float | None = None
    _popped_since_quiet: list[float]

    def __init__(self, thresholds: tuple[float, ...], promote_knob: float,
                 min_runtime: float = 0.0, same_queue_preemption: bool = False) -> None:
        if list(thresholds) != sorted(thresholds) or any(t <= 0 for t in thresholds):
            raise ValueError(f"queue thresholds must be positive and increasing: {thresholds}")
        self.thresholds = thresholds
        self._last_queue = len(thresholds)  # the last queue's number (read per job and stop)
        self.promote_knob = promote_knob
        self.min_runtime = min_runtime
        self.same_queue_preemption = same_queue_preemption
        self._promoted: set[str] = set()  # waiting jobs starving now (their key says queue 0)
        self._promotions: list[tuple[float, int, Job, float]] = []  # (at, seq, job, queued)
        self._promotion_seq = 0
        self._prune_above = PRUNE_FLOOR  # entries past which the dead ones are dropped
        self._offsets: dict[str, float] = {}  # service forgiven at a starvation promotion
        # Seconds run, and seconds waited after having run, since the job's last promotion
        # (the artifact's ``executed_time`` and ``last_pending_time``); waits still going on
        # are not in ``_waited``.
        self._executed: dict[str, float] = {}
        self._waited: dict[str, float] = {}
        self._demotions: list[tuple[float, str, float | None, Job]] = []
        self._running = RunningByQueue(len(thresholds) + 1)
        # Victims only among jobs of the preemptor's own scope (the tenant layer sets it to a
        # job's cluster queue: ``tenancy/profile.py``): one index per scope, so a search reads
        # only its scope's running jobs. None: one index for all.
        self.victim_scope: Callable[[Job], Hashable] | None = None
        self._scoped: dict[Hashable, RunningByQueue] = {}
        # Demotions applied per node (a job's once per node it runs on), and their sum: what
        # ``_demotions_on`` reads for a mask of every node
        self._node_demotions: list[int] = []
        self._node_demotion_total = 0
        self._demotion_count = 0  # demotions applied so far (versions ``_demotion_sums``)
        self._searched_queue = 0  # the queue ``post_filter`` last read (``searched_epoch``)
        self._scope_demotions: dict[Hashable, int] = {}  # the same per victim scope
        self._demotion_sums: dict[int, tuple[np.ndarray, int, int, bool]] = {}
        self._seeded = False
        # Waiting jobs by the queue their key files them in (told by ``on_waiting``, promotions
        # and ``reserve``): a demotion can change a decision only while one waits above the
        # last queue (``_demotions_matter``).
        self._waiting_queue: dict[str, int] = {}
        self._waiting_in = [0] * (len(thresholds) + 1)
        # The same per victim scope, counting the jobs above the last queue only
        self._scope_above_last: dict[Hashable, int] = {}
        # Set by the tenant layer (tenancy/profile.py): whether a cycle changed nothing and
        # stays so while nothing but time and this plugin's demotions moves
        # (``TenantAdmission.quiet``). After such a cycle a demotion is woken for only where
        # it matters (``_next_demotion_that_matters``); the next cycle asks which wake-ups
        # were left out (``left_out``) to advance the fair-sharing history through them.
        self.quiet: Callable[[CycleState], bool] | None = None
        # Whether only this plugin's own PostFilter preempts by its queues; the tenant layer,
        # which also orders and preempts by them, sets it False (tenancy/profile.py).
        self.own_preemption_only = True

    @property
    def lane_safe(self) -> bool:
        """Whether the core's fast lane may start jobs that all fit for this plugin (its
        Reserve and wake-up, ``scheduling/fast_start.py``): without promotion (a waiting job's
        key never changes) and without protection (no wake-up of its own at a start)."""
        return not self.promote_knob and not self.min_runtime

    def restart_warning(self, restart_overhead: float, largest_gang: int) -> str | None:
        """Why these options can preempt a job before it makes progress, or None. A starving
        job promoted to queue 0 starts again from 0 GPU-seconds (§3.2, as the artifact's
        ``solve_starvation``): on a restart it runs ``thresholds[0] / GPUs`` seconds before
        its demotion (and ``min_runtime`` before it may be preempted), and if both end within
        the restart overhead it is demoted, and may be preempted, having made no progress.
        With ``promote_knob`` 1 two such jobs take turns for ever (two 8-GPU jobs on 8 GPUs,
        a 30 GPU-s threshold, a 5 s overhead: a swap every 3.75 s). Without promotion a job's
        service only grows, so every job reaches the last queue: no such cycle."""
        if not self.promote_knob or largest_gang <= 0:
            return None
        window = self.thresholds[0] / largest_gang
        if max(window, self.min_runtime) > restart_overhead:
            return None
        return (f"a job promoted back to queue 0 (promote_knob {self.promote_knob:g}) restarts "
                f"from 0 GPU-s of service: on {count_of(largest_gang, 'GPU')} it is demoted "
                f"{window:.3g} s later (thresholds[0] {self.thresholds[0]:g} GPU-s / "
                f"{count_of(largest_gang, 'GPU')}), "
                f"before its {restart_overhead:g} s restart overhead (restart_overhead) passes, "
                f"and can be preempted again having made no progress (under promote_knob 1 two "
                f"such jobs take turns for ever); thresholds with a first value above "
                f"{restart_overhead * largest_gang:g} GPU-s, or min_runtime above "
                f"{restart_overhead:g} s, prevents it")

    # -- QueueSort ------------------------------------------------------------------------
    def sort_key(self, state: CycleState | None, job: Job) -> tuple[int, float, str]:
        if state is not None:
            return (self.queue_of(state, job), job.spec.submit_time, job.job_id)
        # ``queue_of(None, job)``, inlined: the core's waiting queue asks it at every filing,
        # just after ``on_waiting`` filed the job under that queue (0 once promoted)
        job_id = job.job_id
        queue = self._waiting_queue.get(job_id)
        if queue is not None and job.status in _WAITING:
            return (queue, job.spec.submit_time, job_id)
        if self.promote_knob and self._promoted and job_id in self._promoted:
            return (0, job.spec.submit_time, job_id)
        service = job.attained_service(job.attained_time)
        offsets = self._offsets
        if offsets:
            service -= offsets.get(job_id, 0.0)
        return (bisect.bisect_right(self.thresholds, service + SERVICE_TOLERANCE),
                job.spec.submit_time, job_id)

    def queue_of(self, state: CycleState | None, job: Job) -> int:
        """The job's queue now: its service's level, or 0 while it starves (§3.2). With a
        state, ``_starves``' test inlined and made only above queue 0, where its answer
        matters (a starving job's level is above 0 by that test): asked several times a
        cycle (issue 14)."""
        if state is None:
            if self.promote_knob and self._promoted and job.job_id in self._promoted:
                return 0
            now = job.attained_time
        else:
            now = state.snapshot.now
        job_id = job.job_id
        # ``_level(self._service(state, job))``, inlined
        service = job.attained_service(now)
        offsets = self._offsets
        if offsets:
            service -= offsets.get(job_id, 0.0)
        queue = bisect.bisect_right(self.thresholds, service + SERVICE_TOLERANCE)
        if queue and state is not None and self.promote_knob and job.status in _WAITING:
            executed = self._executed.get(job_id, 0.0)
            if executed > 0.0 and (job_id in self._promoted or now - job.queued_since
                                 >= self.promote_knob * executed
                                 - self._waited.get(job_id, 0.0)):
                return 0
        return queue

    # -- promotions as key changes ---------------------------------------------------------
    def on_waiting(self, job: Job) -> None:
        """The core tells of a job that starts waiting (submitted, or stopped after a run of
        ``last_run_seconds``): note when it will starve, if it can."""
        job_id = job.job_id
        self._promoted.discard(job_id)
        if self.victim_scope is None:  # a stopped job leaves the victim index now
            self._running.drop(job)
        else:
            self._running_of(job).drop(job)
        # Its service's level (it is not promoted now): ``queue_of(None, job)``, inlined, as
        # the attained service of a job that does not run (a call less a stop: issue 14)
        service = (job.attained if job.status is not _RUNNING
                   else job.attained_service(job.attained_time))
        offsets = self._offsets
        if offsets:
            service -= offsets.get(job_id, 0.0)
        queue = bisect.bisect_right(self.thresholds, service + SERVICE_TOLERANCE)
        if self.victim_scope is None:  # ``_file_waiting(job, queue)``'s steps, inlined
            before = self._waiting_queue.pop(job_id, None)
            if before is not None:
                self._waiting_in[before] -= 1
            self._waiting_queue[job_id] = queue
            self._waiting_in[queue] += 1
        else:
            self._file_waiting(job, queue)
        knob = self.promote_knob
        if not knob:
            return
        executed = self._executed.get(job_id, 0.0) + job.last_run_seconds
        if executed <= 0.0:
            return
        self._executed[job_id] = executed
        if queue > 0:  # queue 0 is never promoted
            # ``_starve_wait(job_id)``, inlined (the same operations)
            at = job.queued_since + (knob * executed - self._waited.get(job_id, 0.0))
            self._promotion_seq += 1
            heapq.heappush(self._promotions, (at, self._promotion_seq, job, job.queued_since))
            if len(self._promotions) > self._prune_above:
                self._prune_promotions()

    def _prune_promotions(self) -> None:
        """Drop the promotion entries that can never be due (issue 14: memory follows the jobs
        alive, not the jobs seen): the job ended, or it has been queued again since (its
        ``queued_since`` never goes back). Popped, they would be skipped; kept, each held its
        job after the job ended (31,102 entries, every job, at the end of 10,000 contended
        Philly jobs). Rebuilt when twice what the last rebuild kept: amortized O(1) a push,
        and the live entries pop in the same (time, sequence) order."""
        live = [entry for entry in self._promotions
                if not entry[2].status.is_terminal and entry[2].queued_since <= entry[3]]
        heapq.heapify(live)
        self._promotions[:] = live
        self._prune_above = 2 * len(live) + PRUNE_FLOOR

    def _starve_wait(self, job_id: str) -> float:
        """How long the job may wait from now on before it starves (0 or less: it starves)."""
        return (self.promote_knob * self._executed.get(job_id, 0.0)
                - self._waited.get(job_id, 0.0))

    def key_changes(self, now: float) -> list[Job]:
        """Waiting jobs that starve by ``now`` (the same test as ``_starves``), promoted once:
        the core re-files them under their new key."""
        heap, changed, early = self._promotions, [], []
        # the heap's time and the test may round apart (``max(1.0, abs(now))``, a call less)
        slack = 1e-9 * (magnitude if (magnitude := abs(now)) > 1.0 else 1.0)
        while heap and heap[0][0] <= now + slack:
            entry = heapq.heappop(heap)
            job = entry[2]
            job_id = job.job_id
            # still waiting since it was filed, not promoted yet; ``_starve_wait``, inlined
            if (job.status not in _WAITING or job.queued_since != entry[3]
                    or job_id in self._promoted):
                continue
            if (now - job.queued_since >= self.promote_knob * self._executed.get(job_id, 0.0)
                    - self._waited.get(job_id, 0.0)):
                self._promoted.add(job_id)
                if self.victim_scope is None:  # ``_file_waiting(job, 0)``'s steps, inlined
                    before = self._waiting_queue.get(job_id)
                    if before is not None:
                        self._waiting_in[before] -= 1
                    self._waiting_queue[job_id] = 0
                    self._waiting_in[0] += 1
                else:
                    self._file_waiting(job, 0)
                changed.append(job)
            else:
                early.append(entry)
        for entry in early:
            heapq.heappush(heap, entry)
        return changed

    def _next_promotion(self, now: float) -> float | None:
        """The earliest time a waiting job not yet starving will starve, after ``now``."""
        heap, seen, found, promoted = self._promotions, [], None, self._promoted
        while heap:
            entry = heap[0]
            job = entry[2]
            # still waiting since it was filed (its ``queued_since``), not promoted yet
            if (job.status not in _WAITING or job.queued_since != entry[3]
                    or job.job_id in promoted):
                heapq.heappop(heap)  # stale: it started, or it was promoted already
                continue
            if entry[0] > now:
                found = entry[0]
                break
            job = heapq.heappop(heap)[2]
            if now - job.queued_since < self._starve_wait(job.job_id):
                seen.append(entry)  # not starving yet (rounding): keep it
            # else starving, and it stays so while it waits: no wake-up of its own
        for entry in seen:
            heapq.heappush(heap, entry)
        return found

    def _service(self, state: CycleState | None, job: Job) -> float:
        now = state.snapshot.now if state is not None else job.attained_time
        offsets = self._offsets
        return job.attained_service(now) - (offsets.get(job.job_id, 0.0) if offsets else 0.0)

    def _level(self, service: float) -> int:
        # A wake-up set for a threshold crossing may see the service a hair below it (float
        # rounding); the tolerance makes the demotion happen at the wake-up, not never.
        return bisect.bisect_right(self.thresholds, service + SERVICE_TOLERANCE)

    def _starves(self, job: Job, now: float) -> bool:
        """Whether the waiting job starves at ``now`` (the test ``queue_of`` makes): promoted
        already, or it has waited ``promote_knob`` times what it ran, above queue 0."""
        if not self.promote_knob or job.status not in _WAITING:
            return False
        job_id = job.job_id
        executed = self._executed.get(job_id, 0.0)
        if executed <= 0.0:
            return False
        if job_id in self._promoted:
            return True
        # ``_starve_wait(job_id)`` and ``_level(self._service(state, job))``, inlined
        if (now - job.queued_since
                < self.promote_knob * executed - self._waited.get(job_id, 0.0)):
            return False
        service = job.attained_service(now)
        offsets = self._offsets
        if offsets:
            service -= offsets.get(job_id, 0.0)
        return bisect.bisect_right(self.thresholds, service + SERVICE_TOLERANCE) > 0

    def _file_waiting(self, job: Job, queue: int | None) -> None:
        """Count a waiting job in ``queue`` (None: it no longer waits)."""
        job_id, last = job.job_id, len(self.thresholds)
        before = self._waiting_queue.pop(job_id, None)
        if before is not None:
            self._waiting_in[before] -= 1
        if queue is not None:
            self._waiting_queue[job_id] = queue
            self._waiting_in[queue] += 1
        if self.victim_scope is not None and (before is not None and before < last) != (
                queue is not None and queue < last):
            scope = self.victim_scope(job)
            counts = self._scope_above_last
            counts[scope] = counts.get(scope, 0) + (1 if queue is not None and queue < last
                                                    else -1)

    # -- Reserve --------------------------------------------------------------------------
    def reserve(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> None:
        """A promoted job restarts its count in queue 0 (Tiresias §3.2, starvation). The job
        starts at ``now``: file it under its queue and note its next threshold crossing."""
        now, job_id = state.snapshot.now, job.job_id
        before = None
        if self.victim_scope is None:  # ``_file_waiting(job, None)``'s steps, inlined
            before = self._waiting_queue.pop(job_id, None)
            if before is not None:
                self._waiting_in[before] -= 1
        else:
            self._file_waiting(job, None)
        # ``_service`` and ``_level``, inlined (a job that waits has the service it stopped
        # with: ``Job.attained_service``, a call less)
        service = job.attained if job.status is not _RUNNING else job.attained_service(now)
        offsets, thresholds = self._offsets, self.thresholds
        if offsets:
            service -= offsets.get(job_id, 0.0)
        if (self.promote_knob and job_id in self._executed
                and self._count_wait(job, now, service)):
            # promoted: its offset is its service now, so it starts again from 0 (queue 0):
            # the service less its offset, x - x, and that level, without asking them again
            service = 0.0
            level = bisect.bisect_right(thresholds, SERVICE_TOLERANCE)
        elif (before is not None and job.status is not _RUNNING
              and job_id not in self._promoted):
            level = before  # the level ``on_waiting`` filed it under (its service since)
        else:
            level = bisect.bisect_right(thresholds, service + SERVICE_TOLERANCE)
        self._promoted.discard(job_id)
        (self._running if self.victim_scope is None else self._running_of(job)).file(
            job, level, now, None, len(gpus) or None)
        count = len(gpus) or len(job.allocation) or job.spec.num_gpus
        if level < self._last_queue and count:  # ``_push_demotion``'s steps, inlined
            at = now + (thresholds[level] - service) / count
            heapq.heappush(self._demotions, (at, job_id, now, job))

    def relaunched(self, job: Job, was: float, now: float) -> None:
        """A started job's workers ran late (the runtime: Ray reserves its placement group and
        starts its actors 1-4 s after the cycle; locally it waits for its victims to exit):
        the runtime moved its attempt's start from ``was`` to ``now``
        (``RuntimeScheduler.launched``). Its victim-index entry and its next threshold
        crossing were keyed by ``was`` and would read as stale, so the job would never be
        demoted nor preempted again (Tiresias §3.2 ranks a job by the service it attains);
        both are filed again under the new start."""
        index = self._running if self.victim_scope is None else self._running_of(job)
        if index.restart_at(job, was, now) is None:
            return  # not filed with that start (not seeded yet: ``_advance`` files it)
        service = self._service(None, job)  # ``launched`` moved its service's clock to now
        self._push_demotion_at(now, job, job.run_started, None, service, self._level(service))

    def _count_wait(self, job: Job, now: float, service: float) -> bool:
        """The job starts with ``service``: a starving one is promoted now (its service, run
        and wait counts start again from 0; told True); another adds this wait to its waits
        since its last promotion if it has run since then (the artifact counts
        ``last_pending_time`` only then). ``_starves``' test, inlined."""
        job_id = job.job_id
        executed = self._executed.get(job_id, 0.0)
        if executed <= 0.0:  # neither starving nor counting its waits
            return False
        waited = self._waited.get(job_id, 0.0)
        if job.status in _WAITING and (job_id in self._promoted or (
                now - job.queued_since >= self.promote_knob * executed - waited
                and bisect.bisect_right(self.thresholds, service + SERVICE_TOLERANCE) > 0)):
            self._offsets[job_id] = job.attained  # ``attained_service`` of a waiting job
            self._executed.pop(job_id, None)
            self._waited.pop(job_id, None)
            return True
        self._waited[job_id] = waited + (now - job.queued_since)
        return False

    # -- PostFilter -----------------------------------------------------------------------
    def post_filter(self, state: CycleState, job: Job, room: int = 0) -> Iterable[Job]:
        """Running jobs of lower queues (and, with ``same_queue_preemption``, later jobs of
        the same queue), the lowest first (Tiresias §3.2: a job of a higher queue preempts
        jobs of lower ones); lazily, since the cycle reads only as many as it needs. A job of
        the last queue has none (told as an empty tuple: the cycle then looks no further).
        ``room``: the GPUs a search needs its victims to free, where each frees the GPUs it
        holds (the Tiresias lane's case); told () where all of them together hold fewer, by
        the index's sums (``held_below``) without reading them."""
        heap = self._demotions
        if not self._seeded or (heap and heap[0][0] <= state.snapshot.now):
            self._advance(state)  # (its own test, ahead of the call: asked every attempt)
        queue = self._waiting_queue.get(job.job_id)
        if queue is None or job.status not in _WAITING:
            queue = self.queue_of(state, job)
        elif queue and self.promote_knob and self._starving_now(state, job):
            queue = 0
        self._searched_queue = queue  # (``searched_epoch``)
        if self.same_queue_preemption or self.min_runtime:
            return self._victims(state, job, queue)
        if queue == self._last_queue:
            return ()
        index = self._running if self.victim_scope is None else self._running_of(job)
        if room > 0 and index.held_below(queue, state.evicted) < room:
            return ()
        return index.ranked_below(queue, None, state.evicted)

    def wait_detail(self, job: Job, running: Mapping[str, Job], now: float) -> str | None:
        """Which running jobs this waiting job may not preempt, and the rule (§3.2): those of
        queues above its own, and of its own queue (jobs of a queue keep the GPUs they
        started with; ``same_queue_preemption``: only those submitted before it). None when
        none holds GPUs, or under the tenant layer, whose queues and victims differ."""
        if self.victim_scope is not None or job.status not in _WAITING:
            return None
        queue = self._waiting_queue.get(job.job_id)
        if queue is None:
            queue = self._level(self._service(None, job))
        elif queue and self._starves(job, now):
            queue = 0
        key = (job.spec.submit_time, job.job_id)
        own = above = own_gpus = above_gpus = 0
        for other in running.values():
            level = self._level(other.attained_service(now)
                                - self._offsets.get(other.job_id, 0.0))
            gpus = len(other.allocation) or other.spec.num_gpus
            if level < queue:
                above, above_gpus = above + 1, above_gpus + gpus
            elif level == queue and not (self.same_queue_preemption
                                         and (other.spec.submit_time, other.job_id) > key):
                own, own_gpus = own + 1, own_gpus + gpus
        if not own and not above:
            return None
        held = []
        if own:
            held.append(f"{count_of(own, 'running job')} of its own queue {queue} "
                        f"({count_of(own_gpus, 'GPU')})")
        if above:
            held.append(f"{count_of(above, 'running job')} of higher queues "
                        f"({count_of(above_gpus, 'GPU')})")
        rule = ("it preempts only lower queues and the later jobs of its own "
                "(same_queue_preemption)" if self.same_queue_preemption else
                "it preempts only lower queues (policy option same_queue_preemption=true: "
                "also the later jobs of its own)")
        return f"[tiresias] not preempted: {' and '.join(held)}; {rule}"

    def _starving_now(self, state: CycleState, job: Job) -> bool:
        """Whether a waiting job filed above queue 0 starves by now: ``queue_of``'s test, its
        level known (a waiting job's service does not move, so the level it was filed under
        is its level: ``on_waiting``; a promoted one is filed under 0)."""
        job_id = job.job_id
        executed = self._executed.get(job_id, 0.0)
        return executed > 0.0 and (job_id in self._promoted or state.snapshot.now
                                 - job.queued_since >= self.promote_knob * executed
                                 - self._waited.get(job_id, 0.0))

    def no_victims(self, state: CycleState, job: Job) -> bool:
        """Whether ``post_filter`` would find no victims for a waiting job because it is in
        the last queue: filed there (so not promoted) and not starving by now either (the
        same test ``queue_of`` makes), told without a search."""
        if self.same_queue_preemption:
            return False
        job_id = job.job_id
        if self._waiting_queue.get(job_id) != self._last_queue:
            return False
        # ``not self._starves(job, now)``, inlined (asked for each job a cycle considers
        # after an eviction: issue 14)
        knob = self.promote_knob
        if not knob or job.status not in _WAITING:
            return True
        executed = self._executed.get(job_id, 0.0)
        if executed <= 0.0:
            return True
        if job_id in self._promoted:
            return False
        now = state.snapshot.now
        if now - job.queued_since < knob * executed - self._waited.get(job_id, 0.0):
            return True
        service = job.attained_service(now)
        offsets = self._offsets
        if offsets:
            service -= offsets.get(job_id, 0.0)
        return bisect.bisect_right(self.thresholds, service + SERVICE_TOLERANCE) == 0

    def rank_epoch(self, state: CycleState, job: Job, nodes: np.ndarray) -> tuple | None:
        """What decides this job's victims on ``nodes`` besides starts and stops: the
        demotions of jobs there and the job's own queue (see the cycle's futility memo)."""
        if self.min_runtime:
            return None  # protection ends with time alone
        heap = self._demotions
        if not self._seeded or (heap and heap[0][0] <= state.snapshot.now):
            self._advance(state)
        # ``queue_of`` as ``post_filter`` reads it for a waiting job (asked at each failed
        # attempt: ~1.3 a cycle on the contended Philly table)
        job_id = job.job_id
        queue = self._waiting_queue.get(job_id)
        if queue is None or job.status not in _WAITING:
            queue = self.queue_of(state, job)
        elif queue and self.promote_knob:  # ``_starving_now``, inlined
            executed = self._executed.get(job_id, 0.0)
            if executed > 0.0 and (job_id in self._promoted or state.snapshot.now
                                 - job.queued_since >= self.promote_knob * executed
                                 - self._waited.get(job_id, 0.0)):
                queue = 0
        return (self._demotions_on(nodes), queue)

    def searched_epoch(self) -> tuple[int, int]:
        """``rank_epoch`` on every node (the lane's mask) of the job ``post_filter`` was just
        asked about, in the same cycle, without protection (the Tiresias lane's failed
        search): the demotions so far there (``_demotions_on`` of every node is their kept
        total; ``post_filter`` applied those due, as ``rank_epoch`` would) and the queue
        ``post_filter`` read for the job (``rank_epoch`` reads it alike)."""
        return (self._node_demotion_total, self._searched_queue)

    def victims_epoch(self, state: CycleState, scope: Hashable = None) -> Hashable | None:
        """What, besides starts and stops, may give a waiting job more victims: the demotions
        applied so far (a demoted job may become a victim of a higher queue); with a
        ``victim_scope``, those of the jobs of ``scope`` (a job's victims are of its own
        scope), or of all scopes for None. None with protection, which ends with time alone."""
        if self.min_runtime:
            return None
        self._advance(state)
        if scope is None or self.victim_scope is None:
            return self._demotion_count
        return self._scope_demotions.get(scope, 0)

    def _demotions_on(self, nodes: np.ndarray) -> int:
        """Demotions so far on ``nodes``, kept per mask until the next demotion anywhere (the
        masks are mostly the placement's cached arrays)."""
        cached = self._demotion_sums.get(id(nodes))
        if cached is None or cached[0] is not nodes:
            every = (nodes.dtype == np.bool_ and len(nodes) == len(self._node_demotions)
                     and bool(nodes.all()))
        elif cached[1] == self._demotion_count:
            return cached[2]
        else:
            every = cached[3]
        # a mask of every node (the lane's, on one pool) sums them all: the kept total
        total = (self._node_demotion_total if every
                 else int(np.asarray(self._node_demotions, dtype=np.int64)[nodes].sum()))
        cached = self._demotion_sums[id(nodes)] = (nodes, self._demotion_count, total, every)
        if len(self._demotion_sums) > 4096:  # masks of dynamic filters: do not pile up
            self._demotion_sums = {id(nodes): cached}
        return total

    def _victims(self, state: CycleState, job: Job, queue: int) -> Iterator[Job]:
        key = (job.spec.submit_time, job.job_id) if self.same_queue_preemption else None
        now, protect = state.now, self.min_runtime
        return (
            other for other in self._running_of(job).ranked_below(queue, key)
            if other.job_id not in state.evicted
            and not (protect and other.run_started is not None
                     and now - other.run_started < protect))

    # -- Wake-ups -------------------------------------------------------------------------
    def next_wakeup(self, state: CycleState) -> float | None:
        demotions = self._demotions
        if not self._seeded or (demotions and demotions[0][0] <= state.snapshot.now):
            self._advance(state)  # (its own test, ahead of the call: asked every cycle)
        if self.promote_knob and not self.min_runtime:
            return self._next_demotion_or_promotion(state)
        first = (self._first_live_demotion(state) if demotions and self._demotions_matter(state)
                 else None)
        if not self.min_runtime and not self.promote_knob:  # the default: demotions only
            if first is not None and self._may_sleep(state):
                first = self._next_demotion_that_matters(state)
            return first if first is not None and first > state.snapshot.now else None
        now = state.snapshot.now
        times = [first]
        if self.min_runtime:
            times.append(protection_ends(state, self.min_runtime))
        if self.promote_knob:
            times.append(self._next_promotion(now))
            if state.evicted:
                times += self._evicted_starve_at(state, now)
        soonest = None  # ``min`` of the times after now, without the lists
        for at in times:
            if at is not None and at > now and (soonest is None or at < soonest):
                soonest = at
        return soonest

    def _next_demotion_or_promotion(self, state: CycleState) -> float | None:
        """``next_wakeup`` with starvation promotion and no protection: the soonest after now
        of the first live demotion (where demotions matter), the next promotion of a waiting
        job and the times this cycle's evicted jobs will starve. The evicted jobs are read
        once for both ``_demotions_matter`` and ``_evicted_starve_at`` (the same tests)."""
        now = state.snapshot.now
        soonest, below_last = self._evicted_scan(state, now) if state.evicted else (None, False)
        if self._demotions and (below_last or self._demotions_matter_waiting()):
            first = self._first_live_demotion(state)
            if first is not None and first > now and (soonest is None or first < soonest):
                soonest = first
        at = self._next_promotion(now)
        if at is not None and at > now and (soonest is None or at < soonest):
            soonest = at
        return soonest

    def _evicted_scan(self, state: CycleState, now: float) -> tuple[float | None, bool]:
        """The soonest time after ``now`` one of this cycle's evicted jobs above queue 0
        starves (``_evicted_starve_at``), and whether one of them is below the last queue
        (``_demotions_matter``'s test of the evicted)."""
        knob, executed, waited, offsets = (self.promote_knob, self._executed, self._waited,
                                           self._offsets)
        thresholds, last = self.thresholds, self._last_queue
        soonest, below_last = None, False
        for job in state.evicted.values():
            job_id = job.job_id
            # ``attained_service``, inlined: an evicted job runs until the cycle applies
            service = (job.attained + len(job.allocation) * (now - job.attained_time)
                       if job.status is _RUNNING else job.attained)
            if offsets:
                service -= offsets.get(job_id, 0.0)
            level = bisect.bisect_right(thresholds, service + SERVICE_TOLERANCE)
            if level < last:
                below_last = True
            started = job.run_started
            if level > 0 and started is not None:
                at = now + ((knob * executed.get(job_id, 0.0) - waited.get(job_id, 0.0))
                            + knob * (now - started))
                if at > now and (soonest is None or at < soonest):
                    soonest = at
        return soonest, below_last

    def _evicted_starve_at(self, state: CycleState, now: float) -> list[float]:
        """When each job evicted in this cycle above queue 0 starves (it has run
        ``now - run_started`` more by then), ``_level`` and ``_service`` inlined."""
        knob, executed, waited, offsets = (self.promote_knob, self._executed, self._waited,
                                           self._offsets)
        thresholds, times = self.thresholds, []
        for job in state.evicted.values():
            started = job.run_started
            if started is None:
                continue
            job_id = job.job_id
            service = job.attained_service(now)
            if offsets:
                service -= offsets.get(job_id, 0.0)
            if bisect.bisect_right(thresholds, service + SERVICE_TOLERANCE) > 0:
                times.append(now + ((knob * executed.get(job_id, 0.0)
                                     - waited.get(job_id, 0.0)) + knob * (now - started)))
        return times

    def _first_live_demotion(self, state: CycleState) -> float | None:
        """The time of the first demotion still due to a running job: entries of jobs that
        finished, stopped or restarted since (or stop in this cycle) are dropped here, as
        ``_advance`` would drop them when due, so that no cycle is woken for them (the whole
        Philly table on 64 x 8 GPUs under ``promote_knob=2``: 35k of its 986k cycles woke for
        a job that had finished, and decided nothing). Dropped entries never come back to
        life: a job's later attempt starts after ``now`` and is filed anew. The tenant layer
        replays every wake-up, stale ones included (``left_out``): with it, the first entry."""
        heap, now = self._demotions, state.snapshot.now
        if self.quiet is None and self.own_preemption_only:
            while heap and heap[0][2] != now and not self._live(state, heap[0][3], heap[0][2]):
                heapq.heappop(heap)
        return heap[0][0] if heap else None

    @staticmethod
    def _live(state: CycleState, job: Job, started: float | None) -> bool:
        """Whether a demotion entry for ``job``'s attempt begun at ``started`` is still its
        own: it started in this cycle, or it runs that attempt and is not evicted now."""
        return (job.job_id in state.started and started == state.snapshot.now) or (
            job.run_started == started and job.status is JobStatus.RUNNING
            and job.job_id not in state.evicted)

    def _demotions_matter(self, state: CycleState) -> bool:
        """Whether a running job's demotion can change a decision before the next arrival,
        completion or preemption (each a cycle of its own, which applies the demotions due by
        then: ``_advance``). A demoted job becomes a victim of the waiting jobs of the queues
        above its new one only (§3.2), and nothing else a cycle decides moves with it; so while
        every waiting job, those this cycle evicts included, is in the last queue, no
        demotion's cycle can start or preempt anything, and none is woken for. Always with
        ``same_queue_preemption`` (a job demoted into a waiting job's queue may become its
        victim), protection (victims also change with time), or when another plugin preempts
        by these queues too (``own_preemption_only`` False: the tenant layer)."""
        if self._demotions_matter_waiting():
            return True
        last = len(self.thresholds)
        if not state.evicted:
            return False
        now, offsets, thresholds = state.snapshot.now, self._offsets, self.thresholds
        for job in state.evicted.values():  # ``_level(self._service(...))``, inlined
            service = job.attained_service(now)
            if offsets:
                service -= offsets.get(job.job_id, 0.0)
            if bisect.bisect_right(thresholds, service + SERVICE_TOLERANCE) < last:
                return True
        return False

    def _demotions_matter_waiting(self) -> bool:
        """``_demotions_matter`` but for the evicted: always with another preemptor by these
        queues, same-queue preemption or protection; else whether a job waits above the last
        queue."""
        if not self.own_preemption_only or self.same_queue_preemption or self.min_runtime:
            return True
        # any job filed above the last queue: all filed but those in the last (no slice)
        return len(self._waiting_queue) > self._waiting_in[self._last_queue]

    def _may_sleep(self, state: CycleState) -> bool:
        """Whether this cycle may leave out the wake-ups of demotions that matter to no one:
        one threshold (a demotion is into the last queue: none is due later from it), victims
        per scope, no protection, promotion or same-queue preemption (so a demotion gives
        victims only to waiting jobs above the last queue of its scope), and a quiet cycle
        (``quiet``: until a job arrives, starts or stops, only the demotions could change a
        decision)."""
        if (self.quiet is None or len(self.thresholds) != 1 or self.victim_scope is None
                or self.same_queue_preemption or not self.quiet(state)):
            return False
        if self._quiet_since is None:
            self._quiet_since = state.snapshot.now
            self._popped_since_quiet = []
        return True

    def _next_demotion_that_matters(self, state: CycleState) -> float | None:
        """The earliest demotion of a running job whose scope has a job waiting above the
        last queue (a waiting job it may become a victim of); None: no such demotion."""
        scope, counts, running = self.victim_scope, self._scope_above_last, JobStatus.RUNNING
        assert scope is not None
        found = None
        for at, _, started, job in self._demotions:
            if ((found is None or at < found) and job.status is running
                    and job.run_started == started and counts.get(scope(job), 0) > 0):
                found = at
        return found

    def left_out(self, since: float, now: float) -> list[float]:
        """The demotion wake-ups after ``since`` and before ``now`` that quiet cycles did not
        ask (every demotion wakes a cycle otherwise, stale ones included): the times the
        tenant layer's fair-sharing history is advanced through (``_replay_quiet``)."""
        if self._quiet_since is None:
            return []
        heap, times = self._demotions, [at for at in self._popped_since_quiet if since < at < now]
        size, below = len(heap), [0] if heap else []
        while below:  # heap positions: a child's time is at least its parent's, so stop at now
            position = below.pop()
            at = heap[position][0]
            if at < now:
                if at > since:
                    times.append(at)
                below.extend(child for child in (2 * position + 1, 2 * position + 2)
                             if child < size)
        self._quiet_since, self._popped_since_quiet = None, []
        return times

    def _advance(self, state: CycleState) -> None:
        """Apply every threshold crossing due by now, from a heap of (time, job id, start
        time, job) kept since each job started; stale entries (the job stopped or restarted
        since) are dropped lazily."""
        heap, now = self._demotions, state.snapshot.now
        if not self._seeded:
            self._seeded = True
            self._node_demotions = [0] * state.cluster.num_nodes
            for job in state.snapshot.running:
                self._running_of(job).file(job, self.queue_of(state, job),
                                          job.run_started or 0.0, now)
                self._push_demotion(state, job, job.run_started)
        popped = self._popped_since_quiet if self._quiet_since is not None else None
        offsets, thresholds = self._offsets, self.thresholds
        while heap and heap[0][0] <= now:
            at, job_id, started, job = heapq.heappop(heap)
            if popped is not None:
                popped.append(at)
            status = job.status
            if (job_id in state.started and started == now) or (
                    job.run_started == started and status is _RUNNING
                    and job_id not in state.evicted):
                # ``_service``/``_level`` once, for the queue and the next crossing: a
                # running job's queue is its level (only a waiting one starves)
                # ``attained_service``, inlined (the same operations)
                service = (job.attained + len(job.allocation) * (now - job.attained_time)
                           if status is _RUNNING else job.attained)
                if offsets:
                    service -= offsets.get(job_id, 0.0)
                level = bisect.bisect_right(thresholds, service + SERVICE_TOLERANCE)
                queue = level if status is _RUNNING else self.queue_of(state, job)
                (self._running if self.victim_scope is None else self._running_of(job)).file(
                    job, queue, started or 0.0, now)
                count = len(job.allocation) or job.spec.num_gpus  # ``_push_demotion``
                if level < self._last_queue and count:
                    heapq.heappush(heap, (now + (thresholds[level] - service) / count,
                                          job_id, started, job))
                self._count_demotion(state, job)
                if self.victim_scope is not None:
                    scope = self.victim_scope(job)
                    self._scope_demotions[scope] = self._scope_demotions.get(scope, 0) + 1

    def _count_demotion(self, state: CycleState, job: Job) -> None:
        """Count a demotion applied, once per node the job runs on (``_demotions_on``)."""
        demotions, gpu_node, allocation = (self._node_demotions, state.layout.gpu_node,
                                           job.allocation)
        if len(allocation) == 1:
            demotions[gpu_node[allocation[0]]] += 1
            self._node_demotion_total += 1
        else:
            nodes = set(map(gpu_node.__getitem__, allocation))  # (no Python step a GPU)
            for node in nodes:
                demotions[node] += 1
            self._node_demotion_total += len(nodes)
        self._demotion_count += 1

    def _running_of(self, job: Job) -> RunningByQueue:
        """The index of the running jobs in ``job``'s victim scope."""
        scope = self.victim_scope
        if scope is None:
            return self._running
        key = scope(job)
        index = self._scoped.get(key)
        if index is None:
            index = self._scoped[key] = RunningByQueue(len(self.thresholds) + 1)
        return index

    def _push_demotion(self, state: CycleState, job: Job, started: float | None,
                       gpus: int | None = None, service: float | None = None,
                       level: int | None = None) -> None:
        if service is None or level is None:
            service = self._service(state, job)
            level = self._level(service)
        self._push_demotion_at(state.snapshot.now, job, started, gpus, service, level)

    def _push_demotion_at(self, now: float, job: Job, started: float | None,
                          gpus: int | None, service: float, level: int) -> None:
        """Note when the job, running from ``now`` with ``service`` at ``level``, crosses its
        next threshold (none past the last)."""
        gpus = gpus or len(job.allocation) or job.spec.num_gpus
        if level < len(self.thresholds) and gpus:
            at = now + (self.thresholds[level] - service) / gpus
            heapq.heappush(self._demotions, (at, job.job_id, started, job))


@register_policy("tiresias")
def tiresias(thresholds: tuple[float, ...] = DEFAULT_THRESHOLDS, promote_knob: float = 0.0,
             min_runtime: float = 0.0, placement: str = "consolidated",
             same_queue_preemption: bool = False) -> Profile:
    """Tiresias discretized 2D-LAS with preemption (Gu et al., NSDI'19)."""
    at_least(0, min_runtime=min_runtime, promote_knob=promote_knob)
    order = DiscretizedLas(tuple(thresholds), promote_knob, min_runtime,
                           same_queue_preemption)
    return Profile("tiresias", order, plugins=(order,), placement=placement)
