"""A real LLM service: replicas of the tiny CPU model placed by the scheduler core, requests
routed by JSQ, replicas scaled by the simulator's autoscaling policy (``serving/autoscale.py``).

``LiveService`` is what the HTTP front end (``serving/real/http.py``) calls; it owns the core,
the replica pool and the requests in flight. Times are UNIX seconds (``time.time()``: the
replica processes stamp first tokens with the same clock).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling
from dlsched.runtime.clock import WallClock
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.scheduler import Scheduler
from dlsched.serving.autoscale import AutoscalePolicy, Autoscaler
from dlsched.serving.real.engine import Event
from dlsched.serving.real.pool import CPU_TYPE, ReplicaPool, local_cpus, replica_job
from dlsched.serving.real.replica import ReplicaSettings


@dataclass(frozen=True)
class ServiceOptions:
    replicas: int = 1
    policy: str = "fifo"
    cpus: int | None = None  # the cluster's "GPUs" (None: this machine's CPUs)
    autoscale: AutoscalePolicy | None = None
    settings: ReplicaSettings = field(default_factory=ReplicaSettings)
    name: str = "tiny-lm"
    pin: bool = True  # each replica on the CPU its allocation names


class RequestRejected(Exception):
    """The replica's KV cache can never hold the prompt."""


@dataclass
class _Pending:
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[dict[str, Any]]
    arrived: float
    replica: int
    first_token: float | None = None


class LiveService:
    def __init__(self, options: ServiceOptions) -> None:
        self.options = options
        self.pool = ReplicaPool(options.settings, self._event, options.pin)
        cpus = options.cpus or local_cpus()
        cluster = Cluster("localhost", (Node("localhost", CPU_TYPE, cpus),))
        self.clock = WallClock()
        self.core = Scheduler(cluster, build_policy(options.policy), LinearScaling(),
                              self.clock, self.pool)
        self.core_lock = threading.Lock()
        self.pending: dict[int, _Pending] = {}
        self.rids = itertools.count()
        self.jobs = itertools.count()
        self.scaler = None if options.autoscale is None else Autoscaler(options.autoscale)
        for _ in range(options.replicas):
            self.add_replica()

    def add_replica(self) -> None:
        with self.core_lock, self.clock.frozen() as now:
            self.core.submit(replica_job(self.options.name, next(self.jobs), now))
            self.core.cycle()

    async def generate(self, prompt: list[int], max_tokens: int) -> dict[str, Any]:
        replica = self.pool.route()
        if replica is None:
            raise RuntimeError("no replica placed (the core found no free CPU)")
        rid = next(self.rids)
        loop = asyncio.get_running_loop()
        pending = _Pending(loop, loop.create_future(), time.time(), replica.index)
        self.pending[rid] = pending
        self.pool.submit(replica, rid, prompt, max_tokens)
        return await pending.future

    def _event(self, event: Event) -> None:
        """From the pool's reader thread."""
        pending = self.pending.get(event.rid)
        if pending is None:
            return
        if event.kind == "first":
            pending.first_token = event.time
            return
        del self.pending[event.rid]
        if event.kind == "rejected":
            outcome: dict[str, Any] | Exception = RequestRejected(
                "the prompt needs more KV-cache blocks than the replica has")
        else:
            outcome = {"tokens": list(event.tokens), "replica": pending.replica,
                       "arrived": pending.arrived, "first_token": pending.first_token,
                       "finished": event.time, "preemptions": event.preemptions}
        pending.loop.call_soon_threadsafe(_settle, pending.future, outcome)

    def outstanding(self) -> int:
        return sum(r.outstanding for r in self.pool.replicas if r.retired is None)

    def tick(self) -> None:
        """One autoscaling decision (HPA's rule, as the simulator applies it), then: finish
        retired replicas that drained (their CPU goes back to the core) and run a cycle."""
        if self.scaler is not None:
            live = [r for r in self.pool.replicas if r.retired is None]
            desired = self.scaler.desired(time.time(), len(live), self.outstanding())
            for _ in range(desired - len(live)):
                self.add_replica()
            if desired < len(live):  # retire the least loaded, the still-warming first
                order = sorted(live, key=lambda r: (r.outstanding, r.ready is not None))
                with self.pool.lock:
                    for r in order[:len(live) - desired]:
                        r.retired = time.time()
        with self.core_lock, self.clock.frozen():
            for r in self.pool.replicas:
                if r.retired is not None and r.outstanding == 0 and r.job_id in self.core.running:
                    job = self.core.running[r.job_id]
                    self.core.finish(r.job_id)
                    self.pool.stop(job, self.clock.now())
            self.core.cycle()

    async def autoscale_loop(self) -> None:
        assert self.options.autoscale is not None
        while True:
            await asyncio.sleep(self.options.autoscale.interval)
            await asyncio.to_thread(self.tick)

    def close(self) -> None:
        self.pool.close()


def _settle(future: asyncio.Future[dict[str, Any]], outcome: dict[str, Any] | Exception
            ) -> None:
    if future.done():
        return
    if isinstance(outcome, Exception):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)
