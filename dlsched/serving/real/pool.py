"""A real service's replicas: processes placed by the scheduler core, routed to by JSQ.

Placement: the machine is a cluster of one node whose "GPUs" are its CPUs (type ``CPU``); a
replica is a ``JobSpec`` of kind SERVICE (priority 100, one "GPU"), submitted to the same
``Scheduler`` and policy the simulator and the runtime use. The pool is the core's
``Executor``: when the policy starts a replica job it spawns the replica process pinned to the
CPU the allocation names; when the job is finished (a scale-down drained) it stops it.

Routing is the simulator's (``serving/routing.py``): join the shortest queue on outstanding
requests among ready replicas, ties to the lowest index; the earliest started if none is ready.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

from dlsched.serving.real.engine import Event, Iteration
from dlsched.serving.real.replica import ReplicaSettings, replica_main
from dlsched.serving.service import REPLICA_PRIORITY
from dlsched.workload.job import Job, JobKind, JobSpec

CPU_TYPE = "CPU"


@dataclass
class LiveReplica:
    index: int
    job_id: str
    cpu: int
    process: Any
    inbox: Any  # the sending end of the replica's input pipe
    outbox: Any  # the receiving end of its output pipe
    started: float
    ready: float | None = None
    retired: float | None = None
    outstanding: int = 0
    send_lock: threading.Lock = field(default_factory=threading.Lock)

    def send(self, message: object) -> None:
        with self.send_lock:
            self.inbox.send(message)


@dataclass
class PoolLog:
    """What the service did, for the report: every iteration of every replica, and the count
    of replicas holding a CPU and serving, at each change."""

    iterations: list[tuple[int, Iteration]] = field(default_factory=list)
    replicas: list[tuple[float, int, int]] = field(default_factory=list)  # (time, held, ready)


class ReplicaPool:
    def __init__(self, settings: ReplicaSettings, on_event: Callable[[Event], None],
                 pin: bool = True) -> None:
        self.settings, self.pin = settings, pin
        self.on_event = on_event
        self.context = multiprocessing.get_context("spawn")
        self.closing = False
        self.replicas: list[LiveReplica] = []
        self.log = PoolLog()
        self.lock = threading.Lock()
        self._affinity: set[int] | None = None  # this process's, before ``_front_end_off``
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # --- the core's Executor ---

    def start(self, job: Job, now: float) -> None:
        cpu = job.allocation[0]
        inbox_recv, inbox_send = self.context.Pipe(duplex=False)
        outbox_recv, outbox_send = self.context.Pipe(duplex=False)
        index = len(self.replicas)
        process = self.context.Process(
            target=replica_main,
            args=(index, self.settings, cpu if self.pin else None, inbox_recv, outbox_send),
            name=f"dlsched-replica-{index}", daemon=True)
        process.start()
        inbox_recv.close()
        outbox_send.close()
        with self.lock:
            self.replicas.append(LiveReplica(index, job.job_id, cpu, process, inbox_send,
                                             outbox_recv, time.time()))
            self._count()
        if self.pin:
            self._front_end_off({r.cpu for r in self.replicas})

    def _front_end_off(self, cpus: set[int]) -> None:
        """Keep this process (the HTTP front end, the router, this reader) off the CPUs the
        pinned replicas run on, when any CPU is left: woken by each request and each reply,
        it would otherwise preempt a replica between its iterations. Undone by ``close``."""
        n = os.cpu_count() or 1
        rest = set(range(n)) - {c % n for c in cpus}
        if not rest or not hasattr(os, "sched_setaffinity"):
            return
        if self._affinity is None:
            self._affinity = os.sched_getaffinity(0)
        set_process_affinity(rest)

    def stop(self, job: Job, now: float) -> None:
        for r in self.replicas:
            if r.job_id == job.job_id and r.process.is_alive():
                r.send(None)
        with self.lock:
            self._count()

    # --- routing ---

    def route(self) -> LiveReplica | None:
        """JSQ over ready, unretired replicas; the earliest started unretired one if none is
        ready (it queues there)."""
        with self.lock:
            live = [r for r in self.replicas if r.retired is None]
            ready = [r for r in live if r.ready is not None]
            chosen = (min(ready, key=lambda r: (r.outstanding, r.index)) if ready else
                      min(live, key=lambda r: r.started, default=None))
            if chosen is not None:
                chosen.outstanding += 1
            return chosen

    def submit(self, replica: LiveReplica, rid: int, prompt: list[int], max_tokens: int) -> None:
        replica.send((rid, prompt, max_tokens))

    def ready_count(self) -> int:
        return sum(r.ready is not None and r.retired is None for r in self.replicas)

    def _count(self) -> None:
        held = sum(r.process.is_alive() and r.retired is None for r in self.replicas)
        self.log.replicas.append((time.time(), held, self.ready_count()))

    def _read(self) -> None:
        """Wait on every replica's output pipe; hand each message on."""
        while not self.closing:
            with self.lock:
                pipes = {r.outbox: r for r in self.replicas if not r.outbox.closed}
            for conn in wait(list(pipes), timeout=0.1) if pipes else []:
                try:
                    message = conn.recv()
                except (EOFError, OSError):  # the replica exited
                    conn.close()
                    continue
                self._handle(pipes[conn], message)
            if not pipes:
                time.sleep(0.05)

    def _handle(self, replica: LiveReplica, message: tuple[Any, ...]) -> None:
        if message[0] == "ready":
            with self.lock:
                replica.ready = message[2]
                self._count()
            return
        events, iterations = message[2], message[3]
        with self.lock:
            self.log.iterations.extend((replica.index, it) for it in iterations)
            for event in events:
                if event.kind != "first":
                    replica.outstanding -= 1
        for event in events:
            self.on_event(event)

    def close(self, timeout: float = 5.0) -> None:
        for r in self.replicas:
            if r.process.is_alive():
                with contextlib.suppress(OSError):  # it exited meanwhile
                    r.send(None)
        for r in self.replicas:
            r.process.join(timeout)
            if r.process.is_alive():
                r.process.terminate()
        self.closing = True
        self._reader.join(1.0)
        if self._affinity is not None:
            set_process_affinity(self._affinity)
            self._affinity = None


def replica_job(service: str, index: int, now: float) -> JobSpec:
    """A replica as the core sees it: one CPU, served first, running until stopped."""
    return JobSpec(f"service:{service}/{index}", now, 1, 1e12, gpu_types=(CPU_TYPE,),
                   model="tiny-lm", priority=REPLICA_PRIORITY, kind=JobKind.SERVICE)


def set_process_affinity(cpus: set[int]) -> None:
    """Every thread of this process on ``cpus`` (``sched_setaffinity(0)`` moves only the
    calling thread)."""
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        tids = [0]
    for tid in tids:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(tid, cpus)


def local_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
