"""The scheduler core: the job table, GPU bookkeeping and the state machine, driven by a policy.

Both the simulator and the runtime own one ``Scheduler``; they differ only in the ``Clock`` and
the ``Executor`` they pass in. Everything that changes a job goes through here. The clock must
not move during one call (a cycle reads it for its snapshot and again to apply decisions): the
simulator's moves only between time steps, the runtime freezes its own while it holds its lock.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.errors import ConfigError
from dlsched.perf.model import Placement, ThroughputModel
from dlsched.scheduling.bucket_scan import bucket_of, scans_by_bucket
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.decisions import CycleResult, HandedBooks, Resize, Start
from dlsched.scheduling.fast_start import FastLane, lane_applies
from dlsched.scheduling.framework import Status
from dlsched.scheduling.interfaces import Clock, Executor
from dlsched.scheduling.journal import RunningJournal
from dlsched.scheduling.placement import first_refusal, max_workers, static_shape
from dlsched.scheduling.plugin_checks import static_key_error, unorderable_keys
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.reconfigure import Reconfigurer, Reshape, check_policy
from dlsched.scheduling.rerating import GoodputPoint, ProgressRerater, is_progress_dependent
from dlsched.scheduling.resilience import ResilienceBook
from dlsched.scheduling.resources import ResourceBook, booked_spec
from dlsched.scheduling.segments import RunSegments
from dlsched.scheduling.sharing import SharedGpus
from dlsched.scheduling.state import (
    EPS,
    FULL,
    LIVE_CHANGES,
    LIVE_QUEUE,
    ClusterSnapshot,
    CycleState,
    core_snapshot,
)
from dlsched.scheduling.timeline import Timeline
from dlsched.scheduling.waiting import WaitingQueue
from dlsched.slots import slot_builder
from dlsched.wording import count_of
from dlsched.workload.job import Job, JobSpec, JobStatus

if TYPE_CHECKING:
    from dlsched.mig.book import MigBook

IDLE_RESULT = CycleResult()
_RUNNING, _PREEMPTED, _PENDING = JobStatus.RUNNING, JobStatus.PREEMPTED, JobStatus.PENDING
_FULL, _WHOLE = FULL, FULL - EPS  # a GPU's whole share; a share at least this is whole
# Floats count whole GPUs exactly below 2**53: a total below this stays below 2**53 after any
# job's GPU count is added or taken
_EXACT = 2.0 ** 52
_NO_ROOM = "[placement] needs "  # a reason the policy's wait details may follow (reason_for)
_placement = slot_builder(Placement)  # Placement(...) without its frozen __init__
# Each core counts its running-job changes from its own base: two cores' counts never meet, so
# a policy object used by two cores in turn cannot take one's count for the other's.
_CHANGES_BASE = itertools.count(0, 1 << 40)


@dataclass
class CoreConfig:
    """``restart_overhead``: seconds a job makes no progress after it is resumed (checkpoint
    reload); ``start_overhead``: the same on its first start."""

    restart_overhead: float = 30.0
    start_overhead: float = 0.0
    rerate_progress: bool = True  # re-rate jobs of a progress-dependent model every cycle
    resilience: str = "restart"  # on a node failure without a spare (reconfigure.py)
    reconfigure_seconds: float = 60.0  # an Oobleck reconfiguration's pause
    mig_placement: str = "mig-aware"  # MIG jobs' instances: mig-aware or first-fit (dlsched/mig)


class Scheduler:
    # Every attribute ``__init__`` sets is a slot: CPython 3.11 keeps an instance's
    # attributes as shared-key values for up to 29 names, and past that (the core has 56)
    # every attribute read, write and method call takes a slower, unspecialized path (issue
    # 14: the core reads its own ~10^3 times a cycle). ``__dict__`` keeps other attributes
    # possible (a test may replace a method on an instance).
    __slots__ = ('cluster', 'profile', 'throughput', '_rate_by_count', '_rate_alone',
                 'clock', 'executor', 'config', 'jobs', 'submitted', 'on_terminal',
                 '_bucketed', '_bucket_keys', 'waiting', '_waiting_ids',
                 '_bulk_reasons', '_stopped', '_waiting_hooks', '_relaunch_hooks',
                 '_key_changes', '_reason_seq', 'running', 'journal', 'free',
                 'node_free', 'node_version', '_views', '_books', 'resources',
                 '_resources_view', 'beyond_gpu_jobs', '_gpu_node',
                 '_node_type', 'type_seconds', '_one_type', 'used_gpus', 'timeline',
                 'cycles', 'cycle_seconds', '_max_workers_cache', 'queue_reasons',
                 'fractional_jobs', 'rerater', 'sharing', 'down_nodes', 'down_changes',
                 'resilience', 'segments', '_segment_starts', 'reconfigurer',
                 'reshaped', '_lane', 'mig', '_snapshot_fields', '_grouped', '__dict__',
                 '__weakref__')

    def __init__(self, cluster: Cluster, profile: Profile, throughput: ThroughputModel,
                 clock: Clock, executor: Executor, config: CoreConfig | None = None,
                 resilience: ResilienceBook | None = None) -> None:
        self.cluster = cluster
        self.profile = profile = profile.instantiate()  # this run's plugins (profile.py)
        self.throughput = throughput
        # A model whose rate follows the worker count alone (``_launch``); None: ask ``rate``.
        self._rate_by_count = getattr(throughput, "rate_by_count", None)
        # A model whose rate follows the workers' GPU types and nodes alone, for a job that
        # shares no GPU (``rate_alone``: Gavel's table); None: ask ``rate``.
        self._rate_alone = getattr(throughput, "rate_alone", None)
        self.clock = clock
        self.executor = executor
        self.config = config or CoreConfig()
        check_policy(self.config.resilience)
        self.jobs: dict[str, Job] = {}
        self.submitted = 0  # jobs submitted so far (``Job.seq`` numbers them)
        # Told of each job that reaches a terminal state, once its record is final; it may
        # take the job out of ``jobs`` (the simulator's ``keep_finished=False``).
        self.on_terminal: Callable[[Job], None] | None = None
        static_key = None
        use_throughput = getattr(profile.queue_sort, "use_throughput", None)
        if callable(use_throughput):  # a static key that rates jobs (SJF, SRTF)
            use_throughput(throughput)
        if profile.static_order:
            static_key = partial(profile.queue_sort.sort_key, None)
        # The cycle may skip buckets of alike jobs (bucket_scan.py); their reasons are kept
        # per bucket, stamped like jobs' own (``own_reason``).
        self._bucketed = static_key is not None and (
            scans_by_bucket(profile) or hasattr(profile.queue_sort, "walk_waiting"))
        self._bucket_keys: dict[Hashable, Hashable] = {}
        self.waiting = WaitingQueue(static_key, self._bucket_of if self._bucketed else None)
        self._waiting_ids = self.waiting.ids  # (its ``len`` without a Python call)
        self._bulk_reasons: dict[Hashable, tuple[int, str]] = {}
        # The last cycle that stopped before reaching every waiting job: (stamp, why). A job
        # submitted or stopped since is stamped later (``submit``, ``_preempt``).
        self._stopped: tuple[int, str] | None = None
        # Plugins told of each job that starts waiting, and the QueueSort's changes of static
        # keys due by a time (Tiresias' starvation promotions: a key changes once, at a time
        # known when the job starts waiting).
        plugins = {id(p): p for p in (profile.queue_sort, *profile.plugins)}.values()
        self._waiting_hooks = [p.on_waiting for p in plugins if hasattr(p, "on_waiting")]
        # Plugins that key a running job by its attempt's start, told when the runtime moves
        # it to its workers' launch (``RuntimeScheduler.launched``; Tiresias' index and heap).
        self._relaunch_hooks = [p.relaunched for p in plugins if hasattr(p, "relaunched")]
        # (asked by ``snapshot`` only for a static order, which a queue keeps for its life)
        self._key_changes = (getattr(profile.queue_sort, "key_changes", None)
                             if self.waiting.is_static else None)
        self._reason_seq = 0  # cycles run (a cycle's reasons are stamped 2 x its number)
        self.running: dict[str, Job] = {}
        # Bumped whenever a running job starts, stops, or changes its rate or attempt start:
        # equal counts mean the same running jobs at the same rates (``ClusterSnapshot``);
        # the journal says which jobs each change touched.
        self.journal = RunningJournal(next(_CHANGES_BASE))
        self.free = np.ones(cluster.num_gpus, dtype=np.float64)
        self.node_free = cluster.node_gpus.copy()
        self.node_version = np.zeros(cluster.num_nodes, dtype=np.int64)
        # Read-only views of the three books for snapshots (made once: they see every change).
        self._views = tuple(_read_only(a) for a in (self.free, self.node_free, self.node_version))
        # The same books as memoryviews, for the core's own GPU-by-GPU writes (``_adjust``).
        self._books = tuple(memoryview(a) for a in (self.free, self.node_free,
                                                    self.node_version))
        # CPUs, host memory and GPU memory (resources.py), shown to cycles once a job asks.
        self.resources = ResourceBook.of(cluster)
        self._resources_view = self.resources.read_only()
        self.beyond_gpu_jobs = 0  # submitted jobs that ask for more than GPU compute (ever)
        self._gpu_node = cluster.gpu_node.tolist()  # Python ints: cheaper to index one by one
        self._node_type = [node.gpu_type for node in cluster.nodes]
        # GPU-seconds held per GPU type by settled runs (``gpu_seconds_by_type`` adds the
        # running ones); the timeline keeps only the cluster total.
        self.type_seconds = dict.fromkeys(cluster.type_names, 0.0)
        # its one type, where the cluster has one (every stop charges it: ``_settle``)
        self._one_type = next(iter(self.type_seconds)) if len(self.type_seconds) == 1 else None
        self.used_gpus = 0.0
        self.timeline = Timeline.of_arrays()
        self.cycles = 0
        self.cycle_seconds = 0.0
        self._max_workers_cache: dict[tuple, int] = {}
        self.queue_reasons: dict[str, str] = {}
        self.fractional_jobs = 0  # submitted jobs that ask for part of a GPU (ever)
        self.rerater = (ProgressRerater(throughput) if self.config.rerate_progress
                        and is_progress_dependent(throughput) else None)
        self.sharing = SharedGpus()  # the running jobs holding part of each shared GPU
        # Nodes that are down (failed, in repair, or held as hot spares): no cycle places a
        # worker there; ``submit`` still judges jobs by the whole cluster (nodes come back).
        self.down_nodes: frozenset[int] = frozenset()
        self.down_changes: list[tuple[float, int, bool]] = []  # (time, node, down): reports
        self.resilience = resilience  # checkpoints and failure losses (None: no failures)
        # each job's runs: start, end, GPUs (segments.csv); an open one's GPUs are its job's
        self.segments = RunSegments(self.running)
        self._segment_starts = self.segments.starts  # (``RunSegments.opened``'s dict)
        config = self.config
        self.reconfigurer = (None if config.resilience == "restart" else Reconfigurer(
            config.resilience, throughput, config.restart_overhead, config.reconfigure_seconds,
            self._gpu_node, self._node_type))
        self.reshaped: set[str] = set()  # running below their size after a failure
        # A lone waiting job that fits starts without a full cycle (fast_start.py).
        self._lane = FastLane(self) if lane_applies(self.profile) else None
        self.mig: MigBook | None = None  # MIG instances (dlsched/mig/book.py), once a job asks
        self._snapshot_fields = self._kept_snapshot_fields()
        self._grouped = self.waiting.is_static  # the snapshot's ``by_queue`` is the queue's

    # -- events ---------------------------------------------------------------------------
    def submit(self, spec: JobSpec) -> Job:
        if spec.job_id in self.jobs:
            raise ValueError(f"job {spec.job_id} already submitted")
        if spec.mig_profile is not None:  # only GPU types that offer its instance
            from dlsched.mig.core import pin_mig_types

            spec = pin_mig_types(self.cluster, spec)
        job = Job(spec)
        job.seq = self.submitted
        self.submitted += 1
        job.queued_since = self.clock.now()
        job.reason_stamp = 2 * self._reason_seq + 1
        if spec.mig_profile is not None and self.mig is None:
            from dlsched.mig.book import MigBook

            self.mig = MigBook(self.cluster, self.config.mig_placement)
            self._kinds_changed()
        try:
            most = self._max_workers(job)
        except (KeyError, ValueError) as exc:  # the throughput model cannot rate the job
            message = str(exc.args[0] if exc.args else exc)
            prefix = f"job {spec.job_id}"
            raise ConfigError(message if message.startswith(prefix) else f"{prefix}: {message}"
                              ) from None
        if spec.gpu_share < 1.0 or spec.asks_beyond_gpus:
            self.fractional_jobs += spec.gpu_share < 1.0
            self.beyond_gpu_jobs += spec.asks_beyond_gpus
            self._kinds_changed()
        self.jobs[spec.job_id] = job
        if spec.num_gpus > most:
            job.set_status(JobStatus.FAILED)
            job.finish_time = job.queued_since
            counted = (f" (at most {count_of(spec.max_per_node, 'worker')} of "
                       f"{spec.density_group} per node)" if spec.max_per_node else
                       " (counting the CPUs, host and GPU memory each worker asks for)"
                       if spec.asks_beyond_gpus else "")
            why = f" ({self._refusal(job)})" if most == 0 else ""
            if most == 0 and spec.mig_profile is not None:
                from dlsched.mig.offered import offering_types, unoffered_reason

                if not offering_types(self.cluster.type_names, spec.mig_profile,
                                      spec.gpu_types):
                    why = f" ({unoffered_reason(self.cluster.type_names, spec.mig_profile)})"
            job.pending_reason = (f"can never run: needs {count_of(spec.num_gpus, 'GPU')}, "
                                  f"the nodes it may use have {most}{counted}{why}")
            if self.on_terminal is not None:
                self.on_terminal(job)
            return job
        self._enqueue(job)
        return job

    def _refusal(self, job: Job) -> Status:
        """Which filter leaves a job no node at all (``runnable``: rated 0 everywhere)."""
        return first_refusal(CycleState.begin(self.snapshot(running=False)), job,
                             self.profile.filters)

    def _enqueue(self, job: Job) -> None:
        for hook in self._waiting_hooks:
            hook(job)
        try:
            self.waiting.add(job)
        except (AttributeError, TypeError) as error:
            if not self.waiting.is_static:
                raise
            raise self._static_order_error(job, error) from error

    def _static_order_error(self, job: Job, error: Exception) -> Exception:
        """A static QueueSort's key failed to file ``job``: its ``sort_key(None, job)`` read
        the state, or gave a key that does not compare with the waiting jobs' keys."""
        plugin, name = self.profile.queue_sort, self.profile.name
        try:
            plugin.sort_key(None, job)
        except (AttributeError, TypeError) as own:
            return static_key_error(name, plugin, job, own)
        try:
            waiting: tuple[Job, ...] | list[Job] = self.waiting.ordered()
        except TypeError:  # a whole order first sorted now, with the failed key in it
            waiting = list(self.waiting.values())
        others = [other for other in waiting if other is not job]
        return unorderable_keys(name, plugin, None, (job, *others)) or error

    def finish(self, job_id: str) -> None:
        job = self.running.pop(job_id)
        now = self.clock.now()
        if job.spec.ends_at is None:
            self._settle(job, now, done=True)
            job.done_work = job.spec.work
        else:  # it ends at a fixed time: it did the work it ran, no more (time down is not)
            self._settle(job, now)
        job.set_status(JobStatus.FINISHED)
        job.finish_time = now
        self._release(job, now)
        self.waiting.forget(job_id)
        if self.reconfigurer is not None:
            self.reconfigurer.sizes.pop(job_id, None)
        if self.reshaped:
            self.reshaped.discard(job_id)
            self._grow_back()
        if self.on_terminal is not None:
            self.on_terminal(job)

    def _max_workers(self, job: Job) -> int:
        """Workers the whole cluster could ever give this job (cached per job shape)."""
        spec = job.spec
        shape = (spec.gpu_types, spec.pool, spec.model, spec.batch_size, spec.num_gpus,
                 spec.gpu_share, spec.cpus_per_gpu, spec.memory_gb_per_gpu, spec.gpu_memory_gb,
                 spec.mig_profile, spec.max_per_node)
        most = self._max_workers_cache.get(shape)
        if most is None:
            state = CycleState.begin(self.snapshot(running=False))
            most = self._max_workers_cache[shape] = max_workers(state, job, self.profile.filters)
        return most

    def requeue(self, job_id: str, reason: str, counted: bool = True) -> None:
        """A running job stopped on its own (a worker died, a node failed): back to the queue,
        to resume from its last checkpoint, like a preemption it did not ask for. ``counted``
        False: not counted in its preemptions (the runtime service stopping)."""
        self._preempt(self.running[job_id], self.clock.now(), reason, counted)

    def fail_node(self, node: int, category: str, reason: str,
                  spare: int | None = None) -> list[str]:
        """A node failed: it is down until ``node_up``; every job with a worker on it loses
        the work since its last checkpoint (``fail`` and the policies' preemptions keep all of
        it). With a hot ``spare`` (a down node brought up for it), each such job moves its
        workers from the failed node to the spare's GPUs and restarts at once, as Llama 3's
        and most large trainings do; without one it goes back to the queue. Returns the jobs
        hit."""
        self._set_down(self.down_nodes | {node})
        if spare is not None:
            self.node_up(spare)
        now = self.clock.now()
        gpu_node = self._gpu_node
        hit = [job for job in self.running.values()
               if any(gpu_node[g] == node for g in job.allocation)]
        for job in hit:
            moved = self._spare_gpus(job, node, spare) if spare is not None else None
            reshape = None
            if self.reconfigurer is not None:
                reshape = (self.reconfigurer.shrink(job, self.down_nodes,
                                                    self._free_gpus_for(job))
                           if moved is None else self.reconfigurer.on_spare(moved))
            if reshape is not None:
                self._reshape_after_failure(job, reshape, now, category)
                continue
            self._lose_since_checkpoint(job, now, category, reason, moved)
        return [job.job_id for job in hit]

    def fail_job(self, job_id: str, category: str, reason: str) -> None:
        """A running job lost workers while its nodes stay up (a worker's process or GPU
        died): the same path as a node failure without a spare (``fail_node``): it loses the
        work since its last checkpoint and goes back to the queue, not counted a preemption."""
        self._lose_since_checkpoint(self.running[job_id], self.clock.now(), category, reason,
                                    None)

    def _lose_since_checkpoint(self, job: Job, now: float, category: str, reason: str,
                               moved: tuple[int, ...] | None) -> None:
        kept = job.work_done(now)
        if self.resilience is not None:
            kept = self.resilience.failed(job, now, category, self.config.restart_overhead)
        if moved is None:
            self._preempt(job, now, reason, counted=False)
            job.done_work = kept
            if self.waiting.is_static:
                self.waiting.rekey(job)  # filed before the loss (SRTF's key reads it)
            return
        self._halt(job, now)
        job.done_work = kept
        self._launch(job, moved, job.shares, now, self.config.restart_overhead)

    def client_fault(self, job_id: str, reason: str) -> list[str]:
        """A worker process of a running job crashed (its node did not): the job goes back to
        the queue and loses the work since its last checkpoint (with a resilience book; all
        of it is kept otherwise, as in ``requeue``). Under MPS whose faults reach the whole GPU
        (``fault_spreads``: NVIDIA's MPS docs, "error containment": a fatal GPU exception of
        one client ends every client on the GPUs it shares) the jobs sharing its GPUs go too.
        Returns the jobs hit (none if it does not run)."""
        job = self.running.get(job_id)
        if job is None:
            return []
        from dlsched.perf.interference import fault_spreads

        hit = [job]
        if self.sharing and fault_spreads(self.throughput):
            for gpu in job.allocation:
                hit += [other for other in self.sharing.holders(gpu) if other not in hit]
        now = self.clock.now()
        for victim in hit:
            why = reason if victim is job else f"{reason} of {job_id} on a shared GPU (MPS)"
            self._lose_since_checkpoint(victim, now, "client-fault", why, None)
        return [victim.job_id for victim in hit]

    def _spare_gpus(self, job: Job, node: int, spare: int) -> tuple[int, ...] | None:
        """The job's GPUs with those on ``node`` replaced by the same positions on ``spare``
        (None when the spare is smaller, of another type, or not wholly free)."""
        first, spare_first = (int(self.cluster.node_first_gpu[n]) for n in (node, spare))
        if self._node_type[node] != self._node_type[spare]:
            return None
        size = int(self.cluster.node_gpus[spare])
        moved = []
        for gpu in job.allocation:
            if self._gpu_node[gpu] != node:
                moved.append(gpu)
                continue
            index = gpu - first
            if index >= size or self.free[spare_first + index] < 1.0:
                return None
            moved.append(spare_first + index)
        return tuple(moved)

    def _reshape_after_failure(self, job: Job, reshape: Reshape, now: float,
                               category: str) -> None:
        """Continue on the GPUs a resilience policy keeps (``reconfigure.py``): from the last
        checkpoint when the policy rolls back, else with all but the iteration in flight."""
        kept = job.work_done(now) if reshape.rollback else \
            Reconfigurer.kept_without_rollback(job, now)
        if self.resilience is not None:
            kept = self.resilience.failed(job, now, category, reshape.overhead,
                                          None if reshape.rollback else kept)
        self._reshape(job, reshape, now, kept)

    def _reshape(self, job: Job, reshape: Reshape, now: float,
                 kept: float | None = None) -> None:
        self._halt(job, now)
        if kept is not None:
            job.done_work = kept
        job.resizes += 1
        assert self.reconfigurer is not None
        full = len(reshape.gpus) == self.reconfigurer.size_of(job)
        (self.reshaped.discard if full else self.reshaped.add)(job.job_id)
        self._launch(job, reshape.gpus, (1.0,) * len(reshape.gpus), now, reshape.overhead)

    def _grow_back(self) -> None:
        """Jobs running below their size after a failure take back free GPUs of nodes that
        are up (``Reconfigurer.grow``), before the policy's next cycle sees them."""
        if self.reconfigurer is None:
            return
        now = self.clock.now()
        for job_id in sorted(self.reshaped):
            job = self.running[job_id]
            reshape = self.reconfigurer.grow(job, self._free_gpus_for(job))
            if reshape is not None:
                self._reshape(job, reshape, now)

    def _free_gpus_for(self, job: Job) -> list[list[int]]:
        """Wholly free GPUs of the up nodes of the job's GPU type in its pool, one list per
        node."""
        kind = self.reconfigurer.type_of(job) if self.reconfigurer is not None else ""
        first, free, down = self.cluster.node_first_gpu, self.free, self.down_nodes
        out = []
        for node in np.flatnonzero(self.node_free > 0).tolist():
            if node in down or self._node_type[node] != kind or not self._in_pool(job, node):
                continue
            start = int(first[node])
            gpus = [start + i for i in range(int(self.cluster.node_gpus[node]))
                    if free[start + i] >= 1.0]
            if gpus:
                out.append(gpus)
        return out

    def _in_pool(self, job: Job, node: int) -> bool:
        """Whether ``node`` is in the job's pool (any node when the cluster does not define
        it: ``filters.NodePoolFilter``). A reshape after a failure (``--resilience elastic`` or
        ``oobleck``) once moved a pool-a job onto pool b's free node."""
        pool = job.spec.pool
        return pool is None or pool not in self.cluster.pools or (
            self.cluster.nodes[node].pool == pool)

    def node_up(self, node: int) -> None:
        self._set_down(self.down_nodes - {node})
        if self.reshaped:
            self._grow_back()

    def set_down_nodes(self, nodes: frozenset[int]) -> bool:
        """Mark exactly ``nodes`` down; True if that changed anything."""
        return self._set_down(nodes)

    def _set_down(self, nodes: frozenset[int]) -> bool:
        """``down_nodes`` becomes ``nodes``; each node that went down or came up counts as a
        change of its GPUs (``node_version``), so that a placement that failed there is tried
        again (the cycle's futility memo reads the versions of a job's nodes: a repaired
        node left a job waiting beside free GPUs until the run stalled). True if any did."""
        changed = nodes ^ self.down_nodes
        now = self.clock.now() if changed else 0.0
        for node in changed:
            self.node_version[node] += 1
            self.down_changes.append((now, node, node in nodes))
        self.down_nodes = nodes
        self._snapshot_fields["down_nodes"] = nodes
        if changed and self.resilience is not None:
            down = sum(int(self.cluster.node_gpus[node]) for node in nodes)
            self.resilience.gpus_up(self.clock.now(), self.cluster.num_gpus - down)
        return bool(changed)

    def fail(self, job_id: str, reason: str) -> None:
        """Give up on a job (e.g. it failed too many times)."""
        self._end(job_id, JobStatus.FAILED, reason)

    def cancel(self, job_id: str) -> None:
        self._end(job_id, JobStatus.CANCELLED, "cancelled")

    def _end(self, job_id: str, status: JobStatus, reason: str) -> None:
        job = self.jobs[job_id]
        now = self.clock.now()
        if job.status is JobStatus.RUNNING:
            self.executor.stop(job, now)
            self._settle(job, now)
            self._release(job, now)
            del self.running[job_id]
            self.reshaped.discard(job_id)
        self.waiting.discard(job_id)
        job.set_status(status)
        job.finish_time = now
        job.pending_reason = reason
        if self.on_terminal is not None:
            self.on_terminal(job)

    # -- the cycle ------------------------------------------------------------------------
    def snapshot(self, running: bool = True) -> ClusterSnapshot:
        if running:
            return self._snapshot_at(self.clock.now())
        return ClusterSnapshot(self.cluster, self.clock.now(), *self._views, (), (),
                               self.throughput, by_queue=self.waiting.by_queue(),
                               has_fractional=self.fractional_jobs > 0,
                               buckets=self.waiting.buckets(),
                               own_reason=self.own_reason if self._bucketed else None,
                               resources=(self._resources_view if self.beyond_gpu_jobs
                                          else None), mig=self.mig)

    def _snapshot_at(self, now: float) -> ClusterSnapshot:
        """``snapshot()`` of the running jobs at ``now``, the clock's time (a cycle reads it
        once for its snapshot and its decisions: the clock does not move during a cycle)."""
        if self._key_changes is not None:
            for job in self._key_changes(now):
                self.waiting.rekey(job)
        # The fields that do not change between cycles are kept (live views, bound
        # methods); those that may are set here (``state.core_snapshot``).
        fields = self._snapshot_fields
        fields["now"] = now
        waiting = self.waiting
        if waiting.order_kept:
            fields["waiting"] = waiting.ordered()
        else:  # sorted if read during the cycle (``state.LIVE_QUEUE``): the lane never does
            fields[LIVE_CHANGES] = waiting.changes
        fields["running_changes"] = self.journal.count
        return core_snapshot(fields, self._grouped)

    def _kept_snapshot_fields(self) -> dict[str, Any]:
        """The snapshot's fields that stay the same objects from cycle to cycle, and those
        that change only where the core sets them (``_kinds_changed``, ``_set_down``)."""
        free, node_free, node_version = self._views
        return {"cluster": self.cluster, "free": free, "node_free": node_free,
                "node_version": node_version, "running": self.running.values(),
                "throughput": self.throughput, "by_queue": self.waiting.by_queue(),
                "buckets": self.waiting.buckets(),
                "own_reason": self.own_reason if self._bucketed else None,
                "journal": self.journal, LIVE_QUEUE: self.waiting,
                **self._kinds_fields(), "down_nodes": self.down_nodes}

    def _kinds_fields(self) -> dict[str, Any]:
        """The snapshot's fields that follow the kinds of jobs submitted so far."""
        return {"has_fractional": self.fractional_jobs > 0,
                "resources": self._resources_view if self.beyond_gpu_jobs else None,
                "mig": self.mig}

    def _kinds_changed(self) -> None:
        """A submitted job asks a part of a GPU, more than GPUs, or a MIG instance: the
        snapshot's fields that follow them are set again (not every cycle: ~10^6 cycles on a
        contended run, issue 14)."""
        self._snapshot_fields.update(self._kinds_fields())

    def cycle(self) -> CycleResult:
        waiting_ids = self._waiting_ids
        if not len(waiting_ids) and (not self.profile.acts_on_running or self._settled()):
            if self.rerater is not None:
                self._rerate()
            # Nothing waits: the policy has nothing to decide (the timeline's record: the
            # common cycle of a quiet cluster, after each completion).
            self.timeline.record(self.clock.now(), self.used_gpus, 0, len(self.running))
            self.journal.trim()  # (no snapshot reads its count: its oldest entries go here)
            return IDLE_RESULT
        started = time.perf_counter()
        self._reason_seq += 1
        now = self.clock.now()  # (the cycle's time: its snapshot, decisions and record)
        lane = self._lane
        result = lane.try_start() if lane is not None else None
        if result is None:
            result = run_cycle(self.profile, self._snapshot_at(now))
            self._apply_at(result, now)
        else:
            self.queue_reasons = result.blocked
            self.journal.trim()  # (as in a cycle with nothing waiting)
        if self.mig is not None and self.mig.drain_requests:
            self.mig.commit_drains(self.mig.drain_requests, {s.job_id for s in result.starts})
        if self.rerater is not None:
            self._rerate()
        self.cycles += 1
        self.cycle_seconds += time.perf_counter() - started
        # the cluster after the cycle (recorded here: ~10^6 cycles on a contended run)
        self.timeline.record(now, self.used_gpus, len(waiting_ids),
                             len(self.running))
        return result

    def _settled(self) -> bool:
        """Whether the policy tells that a cycle now (nothing waits) would keep every running
        job as it is (``hooks.SettledAllocator``): then it is skipped, and the policy told."""
        settled, now = self.profile.settled, self.clock.now()
        if settled is None or not settled.changes_nothing(self.running, self.journal.count,
                                                          self.down_nodes):
            return False
        settled.skip_cycle(now)
        return True

    def _rerate(self) -> None:
        if self.rerater is not None:
            before = self.rerater.rerated
            self.rerater.rerate(self.running.values(), self.placement_of, self.executor,
                                self.clock.now())
            if self.rerater.rerated != before:
                self.journal.note_unknown()

    @property
    def running_changes(self) -> int:
        """The count of changes to the running jobs (``journal``)."""
        return self.journal.count

    @property
    def goodput_series(self) -> list[GoodputPoint]:
        return self.rerater.goodput_series if self.rerater is not None else []

    def apply(self, result: CycleResult) -> None:
        self._apply_at(result, self.clock.now())

    def _apply_at(self, result: CycleResult, now: float) -> None:
        """``apply`` at ``now``, the clock's time. Where the cycle's walk handed its books
        (``HandedBooks``: the free books after its starts and stops) and they are of this
        core as it still is, its starts and stops leave the books alone and they are
        written once, node by node, after them (nothing in between reads them)."""
        books = result.books
        if books is not None and not result.resizes and self._books_current(books):
            self._apply_handed(result, books, now)
        else:
            for preempt in result.preemptions:
                self._preempt(self.running[preempt.job_id], now, preempt.reason)
            if result.resizes:
                self._resize(result, now)
            for start in result.starts:
                self._start(self.waiting.pop(start.job_id), start, now)
        self.note_reasons(result.reasons)
        stamp = 2 * self._reason_seq
        for bucket, reason in result.bulk_reasons:
            self._bulk_reasons[bucket] = (stamp, reason)
        if result.stop_reason:
            self._stopped = (stamp, result.stop_reason)
        for reject in result.rejections:
            self._end(reject.job_id, JobStatus.FAILED, reject.reason)
        self.queue_reasons = result.blocked

    def _apply_handed(self, result: CycleResult, books: HandedBooks, now: float) -> None:
        """The stops and starts of a result with handed books (and no resizes), each leaving
        the books alone, then the books written."""
        running, waiting = self.running, self.waiting
        for preempt in result.preemptions:  # (positional: a call with keywords costs more)
            self._preempt(running[preempt.job_id], now, preempt.reason, True, True)
        for start in result.starts:
            self._start(waiting.pop(start.job_id), start, now, False, True)
        self._write_books(books)

    def _books_current(self, books: HandedBooks) -> bool:
        """Whether handed books are this core's as they are now: worked out from its snapshot
        (its ``free`` array), its running jobs unchanged since (the journal's count), and
        ``used_gpus`` a whole number, which one step moves as exactly as one a GPU does."""
        used = self.used_gpus
        return (books.free is self._views[0] and books.changes == self.journal.count
                and used.is_integer() and -_EXACT < used < _EXACT)

    def _write_books(self, books: HandedBooks) -> None:
        """Write handed books: the free share of each GPU that changed hands (the touched
        nodes' other GPUs keep theirs), each touched node's wholly free count, and its
        version moved by the GPUs that changed hands there, as the starts and stops would
        have moved it one GPU at a time (gave back = the count's change + taken)."""
        free, node_free, node_version = self._books
        for gpus, share in books.moved:  # (a GPU given back, then taken: taken)
            for gpu in gpus:
                free[gpu] = share
        counts, taken = books.node_free, books.taken
        for node in books.node_gpus:
            count = counts[node]
            node_version[node] += count - node_free[node] + 2 * taken.get(node, 0)
            node_free[node] = count
        self.used_gpus += books.used  # whole numbers below 2**52: exact, as each step was

    def _resize(self, result: CycleResult, now: float) -> None:
        # Every resized job lets go before any takes: two jobs may swap GPUs in one cycle.
        running = self.running
        moving = [(running[r.job_id], r) for r in result.resizes]
        if self._two_pass_moves():
            self._move_one_gpu(moving, now)
            return
        for job, _ in moving:
            self._halt(job, now)
        overhead, sized = self.config.restart_overhead, self.reconfigurer is not None
        for job, resize in moving:
            job.resizes += 1
            if sized:  # (only a reconfigurer keeps sizes: ``_sized_by_policy``)
                self._sized_by_policy(job, len(resize.gpus))
            job.host = resize.host
            self._launch(job, resize.gpus, resize.shares, now, overhead)

    def _two_pass_moves(self) -> bool:
        """Whether ``_move_one_gpu`` may apply a cycle's moves: nothing shared, resized or
        re-rated by a failure book (Gavel's rounds)."""
        return (self.reconfigurer is None and self.resilience is None
                and not self.sharing.by_gpu)

    def _move_one_gpu(self, moving: list[tuple[Job, Resize]], now: float) -> None:
        """``_resize`` in two passes over the cycle's moves with the books, the journal and
        the rates read once: every halt (``_halt``: the executor's stop, ``_settle``,
        ``_release``), then every launch (``_launch``), the same operations in the same
        order. A move of one whole GPU to one whole GPU with nothing but GPUs booked (no
        host share, MIG, CPUs or memory) is worked out inline (a share of 1: ``held * 1.0``
        is ``held``, ``used_gpus`` moves by 1.0 a GPU); any other takes ``_halt`` and
        ``_launch`` in its place. Gavel's agnostic rounds move ~60 jobs a round, ~25,000 a
        run: five to six calls a move less."""
        executor, journal_note = self.executor, self.journal.note
        stop, ended = executor.stop, self.segments.ended
        gpu_node, node_type = self._gpu_node, self._node_type
        free, node_free, node_version = self._books
        spent, one_type = self.type_seconds, self._one_type
        beyond, used = self.beyond_gpu_jobs, self.used_gpus
        for job, _ in moving:
            allocation = job.allocation
            if (len(allocation) != 1 or job.host is not None or job.shares[0] != _FULL
                    or job.spec.mig_profile or (beyond and job.spec.asks_beyond_gpus)):
                self.used_gpus = used
                self._halt(job, now)
                used = self.used_gpus
                continue
            stop(job, now)
            if job.status is _RUNNING:  # ``_settle``, one whole GPU
                since, productive = job.progress_time, job.productive_from
                if productive > since:
                    since = productive
                ran = now - since
                done, work = job.done_work + job.rate * (ran if ran > 0.0 else 0.0), job.spec.work
                job.done_work = done if done < work else work
                job.attained += now - job.attained_time  # (``len(allocation) *``: 1 *)
            job.progress_time = now
            held = now - (job.run_started if job.run_started is not None else now)
            job.attained_time = now
            job.gpu_seconds += held  # (``held * sum(shares)``: held * 1.0)
            job.last_run_seconds = held
            job.run_seconds += held
            gpu = allocation[0]
            node = gpu_node[gpu]
            if held > 0:
                kind = one_type if one_type is not None else node_type[node]
                spent[kind] += held
            if free[gpu] < _WHOLE:  # ``_release``: ``_adjust_whole`` giving one GPU
                node_free[node] += 1
            free[gpu] = _FULL
            node_version[node] += 1
            used -= 1.0
            ended(job.job_id, now, allocation, job.shares)
            job.rate = 0.0
            job.run_started = None
            journal_note(job)
        self.used_gpus = used
        self._launch_one_gpu(moving, now)

    def _launch_one_gpu(self, moving: list[tuple[Job, Resize]], now: float) -> None:
        """``_move_one_gpu``'s launches (``_launch``; a move of other than one whole GPU
        through it)."""
        start, journal_note = self.executor.start, self.journal.note
        gpu_node, node_type = self._gpu_node, self._node_type
        free, node_free, node_version = self._books
        opened, overhead = self._segment_starts, self.config.restart_overhead
        by_count, alone = self._rate_by_count, self._rate_alone
        beyond, used = self.beyond_gpu_jobs, self.used_gpus
        for job, resize in moving:
            job.resizes += 1
            gpus, spec = resize.gpus, job.spec
            if (len(gpus) != 1 or resize.host is not None or resize.shares[0] != _FULL
                    or spec.mig_profile or (beyond and spec.asks_beyond_gpus)):
                job.host = resize.host
                self.used_gpus = used
                self._launch(job, gpus, resize.shares, now, overhead)
                used = self.used_gpus
                continue
            job.host = None
            job.allocation, job.shares = gpus, resize.shares
            gpu = gpus[0]
            node = gpu_node[gpu]
            if free[gpu] >= _WHOLE:  # ``_adjust_whole`` taking one GPU
                node_free[node] -= 1
            free[gpu] = 0.0
            node_version[node] += 1
            used += 1.0
            opened[job.job_id] = now
            job.run_started = now
            journal_note(job)
            job.progress_time = job.attained_time = now
            job.productive_from = now + overhead
            if by_count is not None:
                job.rate = by_count(spec, 1)
            elif alone is not None:
                job.rate = alone(spec, (node_type[node],), (node,))
            else:
                job.rate = self.throughput.rate(spec, _placement((node_type[node],), (node,),
                                                                 (), None))
            job.pending_reason = ""
            job.epoch += 1
            start(job, now)
        self.used_gpus = used

    def note_reasons(self, reasons: dict[str, str]) -> None:
        """Why each job a cycle looked at still waits, stamped with the cycle's number."""
        stamp, jobs = 2 * self._reason_seq, self.jobs
        for job_id, reason in reasons.items():
            job = jobs[job_id]
            job.pending_reason, job.reason_stamp = reason, stamp

    def reason_for(self, job: Job) -> str:
        """Why a job waits: its own reason from the last cycle that looked at it, or, behind a
        strict-FIFO head, the head's."""
        if job.status.is_waiting and job.spec.queue in self.queue_reasons:
            head_reason = self.queue_reasons[job.spec.queue]
            if job.job_id not in head_reason:
                return head_reason
        stopped = self._stopped
        if (stopped is not None and job.status.is_waiting
                and stopped[0] > self._reason_stamp(job)):
            return stopped[1]  # the last cycle stopped before it reached this job
        reason = self.own_reason(job)
        if reason.startswith(_NO_ROOM) and job.status.is_waiting:
            return self._with_wait_details(job, reason)
        return reason

    def _with_wait_details(self, job: Job, reason: str) -> str:
        """A placement reason ("needs 4 GPUs, 3 free") and, from the policy's PostFilters,
        which running jobs it may not preempt and why (hooks.WaitDetail): without it a job
        that waits behind a later, smaller job of its own Tiresias queue read as if room
        alone were missing. Told when read, in the simulator and the runtime alike."""
        details = getattr(self.profile, "wait_details", ())
        if not details:
            return reason
        now = self.clock.now()
        said = [text for plugin in details
                if (text := plugin.wait_detail(job, self.running, now))]
        return "; ".join((reason, *said))

    def _reason_stamp(self, job: Job) -> int:
        """The stamp of the reason ``own_reason`` gives: the job's own, or its bucket's."""
        bulk = self._newer_bulk(job) if self._bulk_reasons else None
        return job.reason_stamp if bulk is None else bulk[0]

    def _bucket_of(self, job: Job) -> Hashable:
        """(GPU count, static shape): jobs of one bucket fit or fail alike in a cycle. Specs
        that differ only in fields no filter reads (the pool on a cluster without pools)
        share a bucket: fewer buckets to merge each cycle."""
        spec_key = bucket_of(job)
        bucket = self._bucket_keys.get(spec_key)
        if bucket is None:
            state = CycleState.begin(self.snapshot(running=False))
            shape = static_shape(state, job, self.profile.filters)
            bucket = self._bucket_keys[spec_key] = (job.spec.num_gpus, shape)
        return bucket

    def own_reason(self, job: Job) -> str:
        """The reason the last cycle that looked at the job gave: its own, or its bucket's
        when a later cycle skipped the bucket without looking at it (bucket_scan.py)."""
        if self._bulk_reasons:
            bulk = self._newer_bulk(job)
            if bulk is not None:
                return bulk[1]
        return job.pending_reason

    def _newer_bulk(self, job: Job) -> tuple[int, str] | None:
        """A waiting job's bucket's (stamp, reason) when newer than the job's own: a later
        cycle skipped the bucket without looking at the job (bucket_scan.py)."""
        if not job.status.is_waiting:
            return None
        bucket = self.waiting.bucket_named(job.job_id)
        bulk = self._bulk_reasons.get(self._bucket_of(job) if bucket is None else bucket)
        return bulk if bulk is not None and bulk[0] > job.reason_stamp else None

    def start_placed(self, job: Job, start: Start) -> None:
        """Start a job taken from the queue whose GPUs were already booked on the core's
        own free arrays (the fast lane's placement, fast_start.py)."""
        self._start(job, start, self.clock.now(), booked=True)

    def _sized_by_policy(self, job: Job, size: int) -> None:
        """A policy started or resized a job it sizes itself: that is the size a failure
        shrinks it from and it grows back to (``Reconfigurer.sizes``)."""
        if self.reconfigurer is not None and job.spec.is_elastic:
            self.reconfigurer.sizes[job.job_id] = size
            self.reshaped.discard(job.job_id)

    def _start(self, job: Job, start: Start, now: float, booked: bool = False,
               handed: bool = False) -> None:
        status = job.status
        if status is _PREEMPTED or status is _PENDING:  # ``set_status``'s check, inlined
            job.status = _RUNNING
        else:
            job.set_status(_RUNNING)  # it raises
        if self.reconfigurer is not None:  # (only a reconfigurer reshapes or sizes jobs)
            self.reshaped.discard(job.job_id)
            self._sized_by_policy(job, len(start.gpus))
        resumed = job.first_start is not None
        overhead = self.config.restart_overhead if resumed else self.config.start_overhead
        job.first_start = now if job.first_start is None else job.first_start
        self.running[job.job_id] = job
        job.host = start.host
        self._launch(job, start.gpus, start.shares, now, overhead, booked, handed)

    def _launch(self, job: Job, gpus: tuple[int, ...], shares: tuple[float, ...], now: float,
                overhead: float, booked: bool = False, handed: bool = False) -> None:
        """Give a running job its GPUs and start its workers (after a start or a resize);
        ``booked``: its GPU shares are already taken from ``free`` (the fast lane);
        ``handed``: the cycle's books are written after its starts (``_write_books``)."""
        spec = job.spec
        if (self.beyond_gpu_jobs and spec.asks_beyond_gpus) or job.host is not None:
            # it refuses (Overbooked) before anything is booked
            self.resources.take(gpus, booked_spec(job), checked=True)
        job.allocation, job.shares = gpus, shares
        whole = shares.count(_FULL) == len(shares)  # (one count for the books and sharing)
        if handed:
            pass
        elif spec.mig_profile:
            self._adjust(gpus, self._mig_take(job, now), -1.0, booked)
        elif whole and not booked:  # ``_adjust``'s own dispatch (one GPU: its own steps)
            self._adjust_whole(gpus, -1.0)
        else:
            self._adjust(gpus, shares, -1.0, booked)
        self._segment_starts[job.job_id] = now  # ``segments.opened``, inlined
        # Whole shares are shared with no one (``SharedGpus.share``'s first test).
        # (``min(shares) < 1.0``, told without ``min``'s argument parsing when all are whole)
        shared = None if whole or min(shares) >= 1.0 else self.sharing.share(job)
        job.run_started = now
        self.journal.note(job)
        job.progress_time = job.attained_time = now
        job.productive_from = now + overhead
        reconfigurer = self.reconfigurer
        if reconfigurer is not None and (reconfigurer.rates_every_launch
                                         or job.job_id in self.reshaped):
            job.rate = reconfigurer.rate(spec, self.placement_of(job),
                                         reconfigurer.size_of(job))
        elif shared or job.host is not None:
            job.rate = self.throughput.rate(spec, self.placement_of(job))
        else:
            # A model whose rate follows the worker count alone (``rate_by_count``: linear
            # scaling on one type), or the workers' types and nodes alone (``rate_alone``),
            # is asked without a Placement, for an unshared job (the first, here: a call
            # less a start).
            by_count = self._rate_by_count
            job.rate = (by_count(spec, len(gpus)) if by_count is not None
                        else self._unshared_rate(spec, gpus))
        if self.resilience is not None:
            job.rate = self.resilience.launched(job, now, job.rate)
        job.pending_reason = ""
        job.epoch += 1
        self.executor.start(job, now)
        if shared:
            self._rerate_partners(shared, now)

    def _unshared_rate(self, spec: JobSpec, gpus: tuple[int, ...]) -> float:
        """The rate of a job on ``gpus`` that shares none of them and holds no host share,
        from a model without ``rate_by_count`` (``_launch`` asks that one itself)."""
        gpu_node, node_type = self._gpu_node, self._node_type
        if len(gpus) == 1:  # most jobs: no ``map`` objects
            node = gpu_node[gpus[0]]
            nodes, types = (node,), (node_type[node],)
        else:
            nodes = tuple(map(gpu_node.__getitem__, gpus))
            types = tuple(map(node_type.__getitem__, nodes))
        if self._rate_alone is not None:
            return self._rate_alone(spec, types, nodes)
        return self.throughput.rate(spec, _placement(types, nodes, (), None))

    def _halt(self, job: Job, now: float) -> None:
        """Stop a running job's workers and give its GPUs back; it stays running (a resize)."""
        self.executor.stop(job, now)
        self._settle(job, now)
        self._release(job, now)

    def _preempt(self, job: Job, now: float, reason: str, counted: bool = True,
                 handed: bool = False) -> None:
        self.executor.stop(job, now)
        self._settle(job, now)
        self._release(job, now, handed)
        del self.running[job.job_id]
        if self.reshaped:
            self.reshaped.discard(job.job_id)
        job.status = _PREEMPTED  # ``set_status``'s check: a running job may be preempted
        job.preemptions += counted
        job.queued_since = now
        job.pending_reason = reason
        job.reason_stamp = 2 * self._reason_seq + 1
        job.epoch += 1
        self._enqueue(job)

    def _settle(self, job: Job, now: float, done: bool = False) -> None:
        """Fold progress and service up to ``now`` into the job's counters (``done``: the
        job finishes, its work is done: the caller sets ``done_work``). ``Job.work_done`` and
        ``Job.attained_service``, inlined (the same operations): both leave a job that does
        not run as it is."""
        if job.status is _RUNNING:
            if not done:
                # ``max`` and ``min`` of two, as conditionals (the same values: each
                # builtin call parses its arguments, ~10^6 stops on a contended run)
                since, productive = job.progress_time, job.productive_from
                if productive > since:
                    since = productive
                ran = now - since
                done, work = job.done_work + job.rate * (ran if ran > 0.0 else 0.0), job.spec.work
                job.done_work = done if done < work else work
            job.attained += len(job.allocation) * (now - job.attained_time)
        job.progress_time = now
        held = now - (job.run_started if job.run_started is not None else now)
        job.attained_time = now
        total = sum(job.shares)
        job.gpu_seconds += held * total
        job.last_run_seconds = held
        job.run_seconds += held
        if self.resilience is not None:
            self.resilience.settled(job, job.productive_from, now, total)
        if held > 0.0:
            spent, kind = self.type_seconds, self._one_type
            if kind is not None:  # ``_charge_types``' first case, inlined: a call a stop
                charged = spent[kind]
                for share in job.shares:
                    charged += held * share
                spent[kind] = charged
            else:
                self._charge_types(job, held, spent)

    def _charge_types(self, job: Job, held: float, spent: dict[str, float]) -> None:
        if len(spent) == 1:  # one GPU type: the same additions, in the same order
            kind = next(iter(spent))
            total = spent[kind]
            for share in job.shares:
                total += held * share
            spent[kind] = total
            return
        node_of, type_of, allocation = self._gpu_node, self._node_type, job.allocation
        if len(allocation) == 1:  # most jobs: the loop's one step, without a zip
            spent[type_of[node_of[allocation[0]]]] += held * job.shares[0]
            return
        for gpu, share in zip(allocation, job.shares, strict=True):
            spent[type_of[node_of[gpu]]] += held * share

    def gpu_seconds_by_type(self, now: float) -> dict[str, float]:
        """GPU-seconds held on each GPU type up to ``now`` (shares counted; running jobs charged
        up to ``now``; restart overhead counts as held, as in the timeline)."""
        spent = dict(self.type_seconds)
        for job in self.running.values():
            if job.run_started is not None and now > job.run_started:
                self._charge_types(job, now - job.run_started, spent)
        return spent

    def _release(self, job: Job, now: float | None = None, handed: bool = False) -> None:
        """Give a job's GPUs back and close its segment (``now``: the clock's, if given;
        ``handed``: the cycle's books are written after its stops, ``_write_books``)."""
        if now is None:
            now = self.clock.now()
        spec, allocation, shares = job.spec, job.allocation, job.shares
        if handed:
            pass
        elif spec.mig_profile:
            self._adjust(allocation, self._mig_give(job), 1.0)
        elif shares.count(_FULL) == len(allocation):
            self._adjust_whole(allocation, 1.0)  # ``_adjust``'s own dispatch, a call less
        else:
            self._adjust(allocation, shares, 1.0)
        # ``beyond_gpu_jobs`` first: no job asks (the common run), no property to ask
        if (self.beyond_gpu_jobs and spec.asks_beyond_gpus) or job.host is not None:
            self.resources.give(job.allocation, booked_spec(job))
        self.segments.ended(job.job_id, now, allocation, shares)
        job.rate = 0.0
        job.run_started = None
        self.journal.note(job)
        sharing = self.sharing
        if sharing.by_gpu:  # nothing is shared (the common case): no partner to re-rate
            self._rerate_partners(sharing.unshare(job), now)

    # -- MIG (dlsched/mig/book.py): a GPU is booked whole while it holds an instance --------
    def _mig_take(self, job: Job, now: float) -> tuple[float, ...]:
        """Create the job's instances (refused with ``MigOverbooked`` if one does not fit);
        the share of each GPU that changes hands."""
        assert self.mig is not None and job.spec.mig_profile is not None
        self.mig.advance(now)
        return tuple(self.mig.take(gpu, job.job_id, job.spec.mig_profile, launch=True)
                     for gpu in job.allocation)

    def _mig_give(self, job: Job) -> tuple[float, ...]:
        assert self.mig is not None
        self.mig.advance(self.clock.now())
        return (self.mig.give(job.job_id)[1],)

    # -- space sharing ----------------------------------------------------------------------
    def _rerate_partners(self, partners: list[Job], now: float) -> None:
        """A partner started or left: jobs still sharing those GPUs run at a new rate from
        ``now`` (Gavel's co-located throughputs, OSDI'20 §3.1). Progress so far is settled at
        the old rate and the completion re-timed through the executor; no restart overhead."""
        rerate = getattr(self.executor, "rerate", None)
        for job in partners:
            if job.run_started is None:
                continue  # halted in this cycle (a resize): its relaunch rates it
            rate = self.throughput.rate(job.spec, self.placement_of(job))
            if rate == job.rate:
                continue
            job.done_work = job.work_done(now)
            job.progress_time = now
            job.rate = rate
            self.journal.note(job)
            if rerate is not None:
                job.epoch += 1
                rerate(job, now)

    def _adjust(self, gpus: tuple[int, ...], shares: tuple[float, ...], sign: float,
                booked: bool = False) -> None:
        """Give (sign=1) or take (sign=-1) GPU shares, keeping per-node whole-GPU counts;
        ``booked``: the free arrays already show it (count the use and the node versions).
        ``state.shift_free``'s steps, inlined; a node's version moves once by its GPUs of the
        job (the same counts: nothing reads them in between). The books are read and written
        through memoryviews of the arrays (``_books``): Python floats and ints a GPU, not
        numpy scalars."""
        gpu_node, (free, node_free, node_version) = self._gpu_node, self._books
        if len(gpus) == 1:  # the common job: the loop's steps for one GPU
            gpu = gpus[0]
            node, step = gpu_node[gpu], sign * shares[0]
            if not booked:
                old = free[gpu]
                new = old + step
                new = _FULL if new > _FULL else (0.0 if new < 0.0 else new)
                free[gpu] = new
                was_whole = old >= _WHOLE
                if was_whole != (new >= _WHOLE):
                    node_free[node] += -1 if was_whole else 1
            node_version[node] += 1
            self.used_gpus -= step
            return
        if not booked and shares.count(_FULL) == len(gpus):
            self._adjust_whole(gpus, sign)
            return
        used = self.used_gpus  # a local: the same float steps, without attribute writes
        last, count = -1, 0
        for gpu, share in zip(gpus, shares, strict=True):
            node = gpu_node[gpu]
            if node != last:
                if count:
                    node_version[last] += count
                last, count = node, 0
            count += 1
            step = sign * share
            if not booked:
                old = free[gpu]
                new = old + step
                new = _FULL if new > _FULL else (0.0 if new < 0.0 else new)
                free[gpu] = new
                was_whole = old >= _WHOLE
                if was_whole != (new >= _WHOLE):
                    node_free[node] += -1 if was_whole else 1
            used -= step
        if count:
            node_version[last] += count
        self.used_gpus = used

    def _adjust_whole(self, gpus: tuple[int, ...], sign: float) -> None:
        """``_adjust`` of whole GPUs (every share 1), its steps worked out: a free share is
        within [0, 1], so one taken leaves 0 and one given back leaves 1 (the clamp), and a
        node's whole-free count moves where the GPU was (taking) or was not (giving) whole.
        One GPU (most jobs) takes the loop's one step and moves ``used_gpus`` by ``sign``
        (``_adjust``'s ``sign * share`` for a share of 1: the same float)."""
        gpu_node, (free, node_free, node_version) = self._gpu_node, self._books
        given = sign > 0
        if len(gpus) == 1:
            gpu = gpus[0]
            node = gpu_node[gpu]
            if (free[gpu] >= _WHOLE) is not given:
                node_free[node] += 1 if given else -1
            free[gpu] = _FULL if given else 0.0
            node_version[node] += 1
            self.used_gpus -= sign
            return
        value, change = (_FULL, 1) if given else (0.0, -1)
        last, count = -1, 0
        for gpu in gpus:
            node = gpu_node[gpu]
            if node != last:
                if count:
                    node_version[last] += count
                last, count = node, 0
            count += 1
            if (free[gpu] >= _WHOLE) is not given:
                node_free[node] += change
            free[gpu] = value
        if count:
            node_version[last] += count
        # ``sign`` a GPU, in one step where that is the same float: from a whole number each
        # step is exact (``_EXACT``), so their sum is too (every run without fractions)
        used = self.used_gpus
        if used.is_integer() and -_EXACT < used < _EXACT:
            self.used_gpus = used - sign * len(gpus)
        else:
            for _ in gpus:
                used -= sign  # ``sign * 1.0``: the same float step
            self.used_gpus = used

    def placement_of(self, job: Job) -> Placement:
        """Type and node of each worker and, on shared GPUs, the job sharing it (the first
        other holder)."""
        allocation = job.allocation
        if len(allocation) == 1:  # most jobs: no ``map`` objects
            node = self._gpu_node[allocation[0]]
            nodes, types = (node,), (self._node_type[node],)
        else:
            nodes = tuple(map(self._gpu_node.__getitem__, allocation))
            types = tuple(map(self._node_type.__getitem__, nodes))
        sharing = self.sharing
        partners = sharing.partners_of(job) if sharing.by_gpu else None
        if job.host is not None:
            return Placement(types, nodes, partners or (), job.host)
        return _placement(types, nodes, () if partners is None else partners, None)

    @property
    def idle(self) -> bool:
        return not self.waiting and not self.running


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view
