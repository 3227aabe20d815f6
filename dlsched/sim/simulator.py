"""The simulator: the scheduler core driven by a simulated clock and executor over a trace.

Per time step: take every event at that time (completions, failures, arrivals, timers, in that
order), then run one scheduling cycle if anything changed. Arrivals are read straight from the
sorted trace, merged with the heap at their place in that order: they never enter the heap.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass

from dlsched.cluster.cluster import Cluster
from dlsched.errors import ConfigError
from dlsched.gcpause import gc_paused
from dlsched.perf.model import ThroughputModel, get_throughput_model
from dlsched.scheduling.allocation import worker_bounds
from dlsched.scheduling.decisions import CycleResult
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.resilience import ResilienceBook
from dlsched.scheduling.scheduler import CoreConfig, Scheduler
from dlsched.sim.checkpoint import CheckpointPlan
from dlsched.sim.clock import SimClock
from dlsched.sim.events import Event, EventQueue, Priority
from dlsched.sim.executor import SimExecutor
from dlsched.sim.failures import ClientFault, Failure, FailureModel, FailureProcess
from dlsched.sim.finished import FinishedJobs
from dlsched.sim.progress import INTERVAL_SECONDS, ProgressCallback, ProgressReporter
from dlsched.sim.result import SimulationResult, collect_result, final_record, final_values
from dlsched.sim.spares import HotSpares
from dlsched.wording import count_of
from dlsched.workload.job import Job
from dlsched.workload.trace import Trace

WAKEUP, ROUND = "wakeup", "round"
_FINISH, _FAILURE, _ARRIVAL = Priority.FINISH, Priority.FAILURE, Priority.ARRIVAL
_TIMER = Priority.TIMER
_tuple = tuple.__new__
_NEVER = float("inf")
_COMPACT_FLOOR = 1024  # heap entries below which stale ones are left to pop


@dataclass(frozen=True)
class SimConfig:
    """``round_seconds`` overrides the policy's round length (None keeps the policy's).
    ``stall_cycles``: the run ends after this many cycles in a row with nothing running,
    nothing left to arrive and nothing started (``Simulator._stalled``). ``start_overhead``:
    seconds of no progress on a job's first start. ``rounds_only``: cycles run only at
    multiples of the round length from t=0 (arrivals and completions wait for the next one),
    as in the Pollux and Gavel artifacts' simulators."""

    restart_overhead: float = 30.0
    round_seconds: float | None = None
    max_time: float | None = None
    seed: int = 0
    stall_cycles: int = 1000
    start_overhead: float = 0.0
    rounds_only: bool = False
    failures: FailureModel | None = None  # node failures drawn from this model (sim/failures)
    checkpoint: CheckpointPlan | None = None  # default with failures: Young's interval
    hot_spares: int = 0  # nodes held back to replace failed ones at once
    resilience: str = "restart"  # restart | elastic | oobleck (scheduling/reconfigure.py)
    reconfigure_seconds: float = 60.0  # an Oobleck reconfiguration's pause
    # False: a job that ends leaves the core's table; its record is kept as columns
    # (sim/finished.py), so memory follows the jobs alive, not every job seen.
    keep_finished: bool = True
    mig_placement: str = "mig-aware"  # MIG jobs' instances: mig-aware or first-fit
    client_faults: tuple[ClientFault, ...] = ()  # job crashes to inject (sim/failures.py)

    @property
    def resilient(self) -> bool:
        return self.failures is not None or self.checkpoint is not None


class Simulator:
    def __init__(self, cluster: Cluster, trace: Trace, profile: Profile,
                 config: SimConfig | None = None, throughput: ThroughputModel | None = None,
                 progress: ProgressCallback | None = None,
                 progress_interval: float = INTERVAL_SECONDS) -> None:
        self.cluster, self.trace, self.profile = cluster, trace, profile
        self.config = config or SimConfig()
        self.events = EventQueue()
        # the heap and its numbering (``_arm_wakeup`` pushes onto it itself)
        self._heap, self._numbering = self.events.heap, self.events.numbering
        self.clock = SimClock()
        config = self.config
        book = (ResilienceBook(config.checkpoint or CheckpointPlan(), config.failures,
                               cluster.num_gpus, cluster.node_gpus.tolist(),
                               cluster.gpu_node_list, config.hot_spares)
                if config.resilient else None)
        self.core = Scheduler(cluster, profile,
                              throughput or get_throughput_model(trace.throughput),
                              self.clock, SimExecutor(self.events),
                              CoreConfig(restart_overhead=self.config.restart_overhead,
                                         start_overhead=self.config.start_overhead,
                                         resilience=config.resilience,
                                         reconfigure_seconds=config.reconfigure_seconds,
                                         mig_placement=config.mig_placement),
                              book)
        self.profile = self.core.profile  # this run's plugins, with their state
        self.failures = _FailureEvents(self, config) if config.failures is not None else None
        self.round_seconds = self.config.round_seconds or profile.round_seconds
        self.progress = None if progress is None else ProgressReporter(progress,
                                                                       progress_interval)
        self._idle_cycles = 0
        for fault in self.config.client_faults:
            self.events.schedule(fault.time, Event(Priority.FAILURE, fault))
        self.stalled_at: float | None = None  # when the run ended with jobs that never start
        self._stall_wait: float | None = None  # a stalled run waits for its repairs till then
        self._next_arrival = 0
        self._wakeup_token = 0
        self._wakeup_at: float | None = None
        self._recycled_at: float | None = None  # the time a wake-up asked a second cycle at
        self._round_armed = False
        # The heap is rid of its stale entries when it holds more than this (``_compact``);
        # never with failures: their end test counts the heap's entries, stale ones too.
        self._compact_above = _COMPACT_FLOOR if config.failures is None else _NEVER
        self.finished = 0
        self.finished_jobs = None if self.config.keep_finished else FinishedJobs()
        if self.finished_jobs is not None:
            self.core.on_terminal = self._retire

    def run(self) -> SimulationResult:
        """Run to the end of the trace (or ``max_time``). The cyclic garbage collector is
        paused meanwhile: the loop makes no reference cycles (reference counting frees its
        garbage), and its scans of the ~10^5 live jobs cost ~10% of a Philly run."""
        with gc_paused():
            return self._run()

    def _run(self) -> SimulationResult:
        started = time.perf_counter()
        max_time = self.config.max_time
        rounds_only, round_seconds = self.config.rounds_only, self.round_seconds
        events, clock, core, handle = self.events, self.clock, self.core, self._handle
        heap, pop, running = events.heap, heapq.heappop, core.running
        specs, arrival = self.trace.jobs, self._next_arrival
        arrivals = len(specs)
        # The next arrival, read once (a trace may make each spec when it is read).
        spec = specs[arrival] if arrival < arrivals else None
        next_time = spec.submit_time if spec is not None else _NEVER
        while True:
            now = heap[0][0] if heap else _NEVER
            if spec is not None and next_time <= now:
                now = next_time
            elif not heap or (self.failures is not None and spec is None
                              and self.failures.only_failures_left()):
                break
            elif self.failures is not None and spec is None and self.failures.lost_for_good():
                self.stalled_at = clock.time  # the jobs left waiting never start
                break
            if max_time is not None and now > max_time:
                clock.time = max_time
                break
            clock.time = now
            changed = False
            # Same-time order (events.Priority): completions and failures, arrivals, timers
            # (``EventQueue.pop_at``, inlined: the heap's entries are (time, kind, seq, event)).
            while heap and heap[0][0] == now and heap[0][1] < _ARRIVAL:
                event = pop(heap)[3]
                if event.kind is _FINISH:  # ``_finish``, inlined: the common event
                    job = running.get(event.payload)
                    if job is not None and job.epoch == event.token:
                        core.finish(job.job_id)
                        self.finished += 1
                        changed = True
                    continue
                changed |= handle(event)
            while spec is not None and next_time == now:
                core.submit(spec)
                arrival += 1
                spec = specs[arrival] if arrival < arrivals else None
                next_time = spec.submit_time if spec is not None else _NEVER
                changed = True
            self._next_arrival = arrival
            while heap and heap[0][0] == now:
                event = pop(heap)[3]
                if event.kind is _TIMER and event.payload is WAKEUP:  # ``_handle``'s test of
                    changed |= event.token == self._wakeup_token  # a wake-up, inlined
                else:
                    changed |= handle(event)
            if not changed:
                continue
            if rounds_only:  # ``_at_tick`` and ``_arm_tick``'s first test, inlined (a call
                # each per completion between rounds: ~2,300 in Gavel's 1,000-job FIFO)
                ticks = now / (round_seconds if round_seconds is not None
                               else self._tick_seconds())
                if abs(ticks - round(ticks)) >= 1e-9:
                    if not self._round_armed:
                        self._arm_tick()
                    continue
            result = core.cycle()
            if len(heap) > self._compact_above:
                self._compact()
            if self.progress is not None:
                self.progress.tick(self)
            if result.next_wakeup != self._wakeup_at:
                self._arm_wakeup(result.next_wakeup)
            if round_seconds is not None:
                self._arm_round()
            if spec is not None or running or result.starts:
                self._idle_cycles = 0  # ``_stalled``'s first test, inlined
                self._stall_wait = None
            elif self._stalled(result, False):
                self.stalled_at = now
                break
        if self.progress is not None:
            self.progress.done(self)
        return collect_result(self, time.perf_counter() - started)

    def _stalled(self, result: CycleResult, arrivals_left: bool) -> bool:
        """Whether the jobs still waiting can never start: nothing runs, nothing is left to
        arrive, and ``stall_cycles`` cycles in a row started nothing. One such cycle is not
        enough (a timer may still start a job: a requeue backoff ends, a deadline passes),
        but a policy with rounds or timers would otherwise cycle forever over jobs that no
        quota or node admits (a rigid 8-GPU job in a queue of 4). Nodes in repair will come
        back: a run with failures waits for the repairs pending when it first looks stalled
        (each failure and the policy's rounds are cycles too: a 32-GPU job waiting for nodes
        to be repaired was stopped as one that can never start)."""
        if arrivals_left or self.core.running or result.starts:
            self._idle_cycles = 0
            self._stall_wait = None
            return False
        if self._repair_pending_helps():
            return False  # not stuck: capacity the waiting jobs need comes back
        self._idle_cycles += 1
        if self._idle_cycles < self.config.stall_cycles:
            return False
        if self.failures is not None and self._stall_wait is None:
            self._stall_wait = self.failures.last_repair()
        return self._stall_wait is None or self.clock.time >= self._stall_wait

    def _repair_pending_helps(self) -> bool:
        """Whether nodes now in repair (not hot spares held back, nor nodes lost for good)
        would give room to a waiting job the nodes up now cannot hold even empty: the
        smallest waiting job needs more GPUs than are up and no more than are up once repairs
        end. Idle cycles until
        then do not count toward a stall (two nodes both in repair for a day would otherwise
        end a Gandiva run of 60 s rounds after 1,000 of them). A job too large even then
        still stalls the run: this never waits for capacity that is not coming."""
        failures, core = self.failures, self.core
        if failures is None or not core.waiting:
            return False
        in_repair = [node for node, back in failures.repairs.items()
                     if math.isfinite(back) and node in core.down_nodes]
        if not in_repair:  # none, or only nodes lost for good
            return False
        node_gpus = self.cluster.node_gpus
        up = sum(int(node_gpus[node]) for node in range(self.cluster.num_nodes)
                 if node not in core.down_nodes)
        smallest = min(worker_bounds(job)[0] for job in core.waiting.values())
        return up < smallest <= up + sum(int(node_gpus[node]) for node in in_repair)

    def _handle(self, event: Event) -> bool:
        kind = event.kind
        if kind is _FINISH:
            return self._finish(event)
        if kind is _FAILURE:
            if isinstance(event.payload, ClientFault):
                return bool(self.core.client_fault(event.payload.job_id, "client fault"))
            return self.failures.handle(event.payload) if self.failures is not None else False
        if kind is _ARRIVAL:  # not scheduled by the simulator itself (arrivals come from the
            self.core.submit(event.payload)  # trace), but any caller may schedule one
            return True
        if event.payload == ROUND:
            self._round_armed = False
            return True
        return event.token == self._wakeup_token

    def _finish(self, event: Event) -> bool:
        job = self.core.running.get(event.payload)
        if job is None or job.epoch != event.token:
            return False  # stale: the job was preempted after this was scheduled
        self.core.finish(job.job_id)
        self.finished += 1
        return True

    def _compact(self) -> None:
        """Drop the heap's stale entries: completions of jobs stopped or re-rated since (their
        epoch moved on: it never comes back) and wake-ups armed over since (their token is
        old). Each preemption leaves one behind until its time comes, ~98% of a contended
        Tiresias run's heap (issue 14): every push and pop then climbs a heap ~50x larger,
        and each stale entry still costs a turn of the loop when it is due. Live entries pop
        in the same order (their (time, kind, seq) keys are unique); of the stale ones the
        latest is kept, as the run's last time step may be its (a run's end time is the
        last entry's). Rebuilt when twice the entries kept: amortized O(1) a push."""
        heap, running, token = self.events.heap, self.core.running, self._wakeup_token
        kept, latest = [], None
        for entry in heap:
            event = entry[3]
            kind = event.kind
            if kind is _FINISH:
                job = running.get(event.payload)
                live = job is not None and job.epoch == event.token
            else:
                live = kind is not _TIMER or event.payload != WAKEUP or event.token == token
            if live:
                kept.append(entry)
            elif latest is None or entry > latest:
                latest = entry
        if latest is not None:
            kept.append(latest)
        heapq.heapify(kept)
        heap[:] = kept
        self._compact_above = 2 * len(kept) + _COMPACT_FLOOR

    def _retire(self, job: Job) -> None:
        """A job ended: its final record goes to ``finished_jobs``, the job leaves the core."""
        core, now = self.core, self.clock.time
        assert self.finished_jobs is not None
        values = final_values(core, job, now)
        if values is None:
            self.finished_jobs.add(job.seq, final_record(core, job, now))
        else:
            self.finished_jobs.add_values(job.seq, values)
        del core.jobs[job.job_id]

    def _arm_wakeup(self, at: float | None) -> None:
        now = self.clock.time
        if at == self._wakeup_at:
            return  # already armed; or none armed (no timer holds the token) and none asked
        self._wakeup_token += 1  # any wake-up armed before is now stale
        if at is None or at < now or (at == now and self._recycled_at == now):
            self._wakeup_at = None
            return
        if at == now:  # a second cycle at this time (a deferred reclaim): once per time
            self._recycled_at = now
        self._wakeup_at = at
        # Event(...) without its Python-level ``__new__``, pushed as ``events.schedule``
        # does (without its call): a cycle in two arms one
        heapq.heappush(self._heap, (at, _TIMER, next(self._numbering),
                                    _tuple(Event, (_TIMER, WAKEUP, self._wakeup_token))))

    def _arm_round(self) -> None:
        if self.config.rounds_only:
            self._arm_tick()
            return
        if self.round_seconds is None or self._round_armed or self.core.idle:
            return
        self._round_armed = True
        self.events.schedule(self.clock.time + self.round_seconds, Event(Priority.TIMER, ROUND))

    def _at_tick(self, now: float) -> bool:
        ticks = now / self._tick_seconds()
        return abs(ticks - round(ticks)) < 1e-9

    def _tick_seconds(self) -> float:
        if self.round_seconds is None:
            raise ValueError("rounds_only needs a round length (round_seconds)")
        return self.round_seconds

    def _arm_tick(self) -> None:
        """Wake at the next multiple of the round length (``rounds_only``), once."""
        if self._round_armed or self.core.idle:
            return
        seconds = self._tick_seconds()
        self._round_armed = True
        at = (math.floor(self.clock.time / seconds + 1e-9) + 1) * seconds
        self.events.schedule(at, Event(Priority.TIMER, ROUND))


class _FailureEvents:
    """Node failures and repairs as events of the simulator's queue (``Priority.FAILURE``):
    a failure takes its node down and stops the jobs on it (``Scheduler.fail_node``); its
    repair brings the node back, or keeps it as a hot spare when its pool's spares are short
    and no job a failure without a spare stopped still waits for it.
    With hot spares, a spare of the failed node's pool replaces it at once (``spares.py``)."""

    def __init__(self, sim: Simulator, config: SimConfig) -> None:
        assert config.failures is not None
        self.sim = sim
        self.process = FailureProcess(config.failures, sim.cluster, config.seed)
        nodes = sim.cluster.num_nodes
        if not 0 <= config.hot_spares < nodes:
            raise ConfigError(f"--hot-spares {config.hot_spares}: the cluster "
                              f"{sim.cluster.name} has {count_of(nodes, 'node')}; at most "
                              f"{nodes - 1} can be held back as spares")
        self.spares = HotSpares(sim.cluster, config.hot_spares)  # per pool (spares.py)
        self.pending = 0
        self.repairs: dict[int, float] = {}  # node -> when its pending repair ends
        if config.hot_spares:
            sim.core.set_down_nodes(self.spares.nodes())
        self._next()

    def only_failures_left(self) -> bool:
        """No job is left and no event but failures and repairs is left that can change
        anything. Stale entries (the completion of a job stopped since, a wake-up armed over:
        ``Simulator._compact`` keeps the latest of them) do not count: they kept a run going,
        drawing and counting failures, until the time of a completion planned before a
        preemption (pollux-1 on pollux-64 at llama3x1000: 128 node failures counted in a
        run of 32.7 h, drawn up to t = 750,886 s: 20 by its end)."""
        sim = self.sim
        if not sim.core.idle:
            return False
        if self.pending == len(sim.events):
            return True
        token = sim._wakeup_token
        for entry in sim.events.heap:
            event = entry[3]
            kind = event.kind
            if kind is _FAILURE or kind is _FINISH:  # no job runs: every completion is stale
                continue
            if kind is _TIMER and event.payload == WAKEUP and event.token != token:
                continue
            return False
        return True

    def lost_for_good(self) -> bool:
        """No job runs and every node is down with no repair that ends (lost for good: a
        failure category's ``repair_hours`` may be infinite; a spare still held is never
        taken, as only a node that is up can fail): no job still waiting can ever start.
        Failures of nodes already down change nothing, so no cycle would come to find the run
        stalled: it went on drawing them for ever (a failure YAML with ``repair_hours: .inf``
        on philly-sample)."""
        core = self.sim.core
        return (not core.running and len(core.down_nodes) == self.sim.cluster.num_nodes
                and self.last_repair() is None)

    def last_repair(self) -> float | None:
        """When the last pending repair ends (None: no node will come back)."""
        finite = [t for t in self.repairs.values() if math.isfinite(t)]
        return max(finite) if finite else None

    def _schedule(self, time: float, payload: object) -> None:
        self.pending += 1
        self.sim.events.schedule(time, Event(Priority.FAILURE, payload))

    def inject(self, failure: Failure) -> None:
        """A failure given by the caller (a replayed trace, a test), beside the drawn ones."""
        self._schedule(failure.time, failure)

    def _next(self) -> None:
        failure = self.process.next()
        if failure is not None:
            self._schedule(failure.time, failure)

    def handle(self, payload: object) -> bool:
        self.pending -= 1
        core = self.sim.core
        if isinstance(payload, Failure):
            self._next()
            if payload.node in core.down_nodes:
                return False  # a node already down (in repair, or a spare) cannot fail again
            assert core.resilience is not None
            core.resilience.node_failed(payload.category)
            spare = self.spares.take(payload.node)  # one of the failed node's pool
            hit = core.fail_node(payload.node, payload.category,
                                 f"node failure ({payload.category}) on "
                                 f"{self.sim.cluster.nodes[payload.node].name}", spare)
            if spare is None:
                self.spares.owe(payload.node, hit)  # the pool's next repaired node is theirs
            repaired = self.sim.clock.time + payload.repair_seconds
            self._schedule(repaired, ("repair", payload.node))
            self.repairs[payload.node] = repaired
            return True
        node = payload[1]  # type: ignore[index]
        self.repairs.pop(node, None)
        waiting = core.waiting.__contains__
        if self.spares.keep(node, waiting):  # into its pool's spares: stays out of the cycle
            return False
        core.node_up(node)
        return True


def simulate(cluster: Cluster, trace: Trace, profile: Profile,
             config: SimConfig | None = None, **kwargs: object) -> SimulationResult:
    return Simulator(cluster, trace, profile, config, **kwargs).run()  # type: ignore[arg-type]
