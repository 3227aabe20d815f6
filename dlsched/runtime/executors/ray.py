"""The Ray executor: each worker of a job is a subprocess of a Ray actor, on the node and GPU
the policy chose.

An attempt moves through these phases, one step per ``poll`` (nothing here blocks the service
for more than a short RPC):

1. **queued**: ``start`` was called, but a stopped attempt of the same job, or one on the same
   GPUs, is still exiting (the local executor's rule: a job never runs twice at once, no GPU is
   shared).
2. **reserving**: a placement group with one bundle ``{"GPU": 1}`` per worker (a fractional
   or MIG job's bundle asks a fraction of a ``GPU``, ``mig-<profile>``, ``CPU`` and
   ``memory``: ``sharing.py``), each bundle
   pinned to the Ray node of the worker's GPU (``ray.io/node-id`` label selector). Ray reserves
   all bundles or none (gang), so a gang whose GPUs another Ray user still holds waits here.
   One actor per bundle (``num_cpus=0``, ``num_gpus=0``: the bundle holds the GPU). Ray counts
   GPUs per node; *which* index a worker uses is dlsched's decision, given to it in
   ``CUDA_VISIBLE_DEVICES`` (Ray leaves that variable alone when an actor asks for no GPU).
3. **starting**: rank 0's actor has answered with its address and a free port (``MASTER_ADDR``,
   ``MASTER_PORT``); every actor starts the command with the environment contract.
4. **running**: every actor's ``wait`` call is outstanding; all exit codes 0 -> succeeded, any
   other code or a lost actor -> the other ranks are killed, failed.
5. **stopping** (preemption, cancel, shutdown): SIGTERM to every worker's process group, SIGKILL
   once the grace period has passed; when all have exited -> stopped.

An ended attempt's leftover processes are killed, its actors killed and its placement group
removed, which frees its GPUs in Ray. What is done to an attempt's group and actors (reserve,
signal, read exit codes, release) is ``ray_attempt.py``; this module decides when.

**Restarts**: the group and actors are detached and named after the service (``owner``), so
they outlive a crashed service; the restarted one adopts the attempts that still run and
releases the rest (``ray_adopt.py``). A service that stays dead for ``orphan_timeout`` seconds
loses them: its lease actor, which ``poll`` renews, releases them (``ray_lease.py``).

**Node loss**: a rank whose actor died (no exit code) ends its attempt as ``lost``: the service
requeues it without counting a failure. Ray declares the node itself dead a few seconds later
(health checks); every ``NODE_CHECK_SECONDS`` the executor asks Ray which nodes are alive, and
an attempt with a worker on a dead node ends at once as ``lost`` whatever its phase: a
placement group pinned to a dead node would otherwise wait forever, and a surviving rank would
wait in a collective until its timeout. The dead nodes are reported by ``down_nodes`` and the
service marks them down in the core, so no policy places a worker there until Ray sees the
node again.
"""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

from dlsched.runtime.executors.base import (
    AttemptBook,
    AttemptEnd,
    AttemptLaunch,
    CannotStart,
    ExecutorSettings,
    Outcome,
    Planner,
    contract_env,
    describe_stopped,
    rank_envs,
)
from dlsched.runtime.executors.ray_adopt import RayAdoption, Reservation
from dlsched.runtime.executors.ray_attempt import RPC_TIMEOUT, Phase, RayAttempt, all_ready, cause
from dlsched.runtime.executors.ray_cluster import RayCluster
from dlsched.runtime.executors.ray_lease import LeaseKeeper
from dlsched.runtime.executors.ray_worker import WorkerProcess
from dlsched.runtime.executors.sharing import add_sharing_env
from dlsched.workload.job import Job

NODE_CHECK_SECONDS = 1.0
RESERVING = ("waiting for Ray to reserve its GPUs (another Ray user holds them, or their node "
             "lacks a resource its workers ask for)")
_Attempt = RayAttempt  # its name before ray_attempt.py (tests/runtime/test_ray_restart_order.py)


class RayExecutor(RayAdoption, AttemptBook):
    """Not thread-safe: the service calls it under its lock. Needs ``ray.init`` done (see
    ``ray_cluster.connect``). ``owner`` prefixes the names of its detached groups and actors
    (the service sets it from its database before it recovers: ``ray_adopt.py``)."""

    def __init__(self, ray_cluster: RayCluster, plan: Planner,
                 settings: ExecutorSettings) -> None:
        import ray

        self.ray = ray
        self.ray_cluster = ray_cluster
        self.cluster = ray_cluster.cluster
        self.plan = plan
        self.settings = settings
        self._actor = ray.remote(num_cpus=0, num_gpus=0, max_concurrency=4)(WorkerProcess)
        super().__init__(RayAttempt)
        self._down: frozenset[int] = frozenset()
        self._next_node_check = 0.0
        self.owner = "dlsched"
        self._found: dict[str, Reservation] | None = None  # the old service's, at a restart
        self._adopting: dict[str, tuple[Reservation, tuple[int, ...], int, Path]] = {}
        self.lease = LeaseKeeper(ray, settings.orphan_timeout, settings.grace_seconds)

    def start(self, job: Job, now: float) -> None:
        attempt = self._adopted(job.job_id, tuple(int(g) for g in job.allocation))
        if attempt is not None:
            self._active[job.job_id] = attempt
            return
        super().start(job, now)

    def _adopted_attempt(self, found: Reservation, gpus: tuple[int, ...], number: int,
                         log_path: Path) -> RayAttempt:
        """A running attempt of the old service, its actors and group taken over."""
        return RayAttempt(found.job_id or "", gpus, Phase.RUNNING, number, found.group,
                          list(found.actors), log_path=log_path, launched=True,
                          exit_refs=[actor.wait.remote() for actor in found.actors])

    def _terminate(self, attempt: RayAttempt) -> None:
        if attempt.phase is Phase.RESERVING:
            self._release(attempt)  # nothing started yet: nothing to tell
            return
        self._signal(attempt, signal.SIGTERM)
        attempt.phase = Phase.STOPPING
        attempt.kill_at = time.monotonic() + self.settings.grace_seconds
        self._stopping.append(attempt)

    # -- what the service loop calls ------------------------------------------------------
    def poll(self) -> list[AttemptEnd]:
        self.lease.renew(self.owner)
        self._check_nodes()
        for attempt in list(self._active.values()):
            self._advance(attempt)
        for attempt in list(self._stopping):
            self._advance_stopping(attempt)
        self._launch_ready()
        ended, self._ended = self._ended, []
        return ended

    def drain(self, timeout: float) -> list[AttemptEnd]:
        """As every executor's; then the lease ends too (nothing is left for it to release)."""
        ended = super().drain(timeout)
        self.lease.end()
        return ended

    def _kill_stopping(self) -> None:
        for attempt in self._stopping:
            self._signal(attempt, signal.SIGKILL)
            self._release(attempt)
        self._stopping.clear()

    def down_nodes(self) -> frozenset[int]:
        return self._down

    def unlaunched_reason(self, job_id: str) -> str:
        """Why a started job has no workers yet beyond ``waiting_for`` ("": it has them, or
        it is not this executor's): its placement group is not reserved in Ray."""
        attempt = self._active.get(job_id)
        if attempt is None or attempt.phase is not Phase.RESERVING:
            return ""
        return RESERVING

    # -- node loss ------------------------------------------------------------------------
    def _check_nodes(self) -> None:
        now = time.monotonic()
        if now < self._next_node_check:
            return
        self._next_node_check = now + NODE_CHECK_SECONDS
        alive = {info["NodeID"] for info in self.ray.nodes() if info.get("Alive")}
        self._down = frozenset(index for index, node in enumerate(self.ray_cluster.nodes)
                               if node.node_id not in alive)
        if not self._down:
            return
        for attempt in [*self._active.values(), *self._stopping]:
            lost = self._lost_node(attempt)
            if lost is not None:
                self._abandon(attempt, lost)

    def _lost_node(self, attempt: RayAttempt) -> str | None:
        for gpu in attempt.gpus:
            if int(self.cluster.gpu_node[gpu]) in self._down:
                return self.ray_cluster.node_of_gpu(gpu).name
        return None

    def _abandon(self, attempt: RayAttempt, node: str) -> None:
        """End an attempt that had a worker on a dead node; kill its surviving ranks."""
        stopping = attempt in self._stopping
        self._active.pop(attempt.job_id, None)
        if not attempt.launched:  # still reserving or starting: record it all the same
            if attempt.number == 0:
                plan = self.plan(attempt.job_id)
                attempt.number, attempt.log_path = plan.attempt, plan.log_path
            self._record_launch(attempt, ())
        self._signal(attempt, signal.SIGKILL)
        outcome = Outcome.STOPPED if stopping else Outcome.LOST
        self._end(attempt, outcome, f"node {node} died (Ray lost it)")

    # -- phases ---------------------------------------------------------------------------
    def _launch(self, attempt: RayAttempt) -> None:
        self._reserve(attempt)
        self._active[attempt.job_id] = attempt

    def _reserve(self, attempt: RayAttempt) -> None:
        node_ids = [self.ray_cluster.node_of_gpu(gpu).node_id for gpu in attempt.gpus]
        attempt.reserve(self._actor, f"{self.owner}-{attempt.job_id}-{uuid.uuid4().hex[:8]}",
                        node_ids)

    def _advance(self, attempt: RayAttempt) -> None:
        if attempt.phase is Phase.RESERVING and all_ready(self.ray, [attempt.where]):
            self._start_workers(attempt)
        if attempt.phase is Phase.STARTING:
            self._collect_pids(attempt)
        if attempt.phase is Phase.RUNNING:
            attempt.collect_exits(self.ray)
            failed = attempt.first_failure()
            if failed is not None:
                del self._active[attempt.job_id]
                self._signal(attempt, signal.SIGKILL)  # the others cannot go on without it
                # No exit code: the actor itself died (its node did, most often), not the job.
                outcome = Outcome.LOST if failed[1] is None else Outcome.FAILED
                self._end(attempt, outcome, attempt.failure_text(*failed))
            elif attempt.exited():
                del self._active[attempt.job_id]
                self._end(attempt, Outcome.SUCCEEDED, "all workers exited with code 0")

    def _start_workers(self, attempt: RayAttempt) -> None:
        plan = self.plan(attempt.job_id)
        attempt.number, attempt.log_path = plan.attempt, plan.log_path
        try:
            _, address, port = self.ray.get(attempt.where, timeout=RPC_TIMEOUT)
        except self.ray.exceptions.RayError as exc:
            del self._active[attempt.job_id]
            self._record_launch(attempt, ())
            died = isinstance(exc, self.ray.exceptions.ActorDiedError)  # with its node, mostly
            self._end(attempt, Outcome.LOST if died else Outcome.FAILED,
                      f"its Ray actors did not start: {cause(exc)}")
            return
        shared = {**plan.env, **contract_env(attempt.job_id, plan, len(attempt.gpus),
                                             (address, port), self.settings)}
        for rank, (actor, per_rank) in enumerate(zip(
                attempt.actors, rank_envs(self.cluster, attempt.gpus), strict=True)):
            env = add_sharing_env({**shared, **per_rank}, attempt.sharing, self.cluster,
                                  attempt.gpus[rank], rank, plan.env)
            attempt.pid_refs.append(actor.start.remote(
                list(plan.command), env, plan.working_dir,
                str(plan.log_path)))
            attempt.exit_refs.append(actor.wait.remote())
        attempt.phase = Phase.STARTING

    def _collect_pids(self, attempt: RayAttempt) -> None:
        if not all_ready(self.ray, attempt.pid_refs):
            return
        pids, errors, retryable = [], [], True
        for ref in attempt.pid_refs:
            try:
                pids.append(int(self.ray.get(ref, timeout=RPC_TIMEOUT)))
            except self.ray.exceptions.RayError as exc:
                errors.append(cause(exc))
                # Ray's task error is also an instance of the actor's exception's class
                retryable = retryable and not isinstance(exc, CannotStart)
        self._record_launch(attempt, tuple(pids))
        if errors:
            self._active.pop(attempt.job_id, None)
            self._signal(attempt, signal.SIGKILL)
            outcome = Outcome.STOPPED if attempt.phase is Phase.STOPPING else Outcome.FAILED
            self._end(attempt, outcome, f"could not start its workers: {errors[0]}", retryable)
        elif attempt.phase is Phase.STARTING:
            attempt.phase = Phase.RUNNING

    def _advance_stopping(self, attempt: RayAttempt) -> None:
        if not attempt.launched:
            self._collect_pids(attempt)
            if not attempt.launched or attempt not in self._stopping:
                return
        attempt.collect_exits(self.ray)
        if attempt.exited():
            self._stopping.remove(attempt)
            self._end(attempt, Outcome.STOPPED,
                      describe_stopped([attempt.codes[r] for r in range(len(attempt.gpus))]))
        elif attempt.kill_at is not None and time.monotonic() >= attempt.kill_at:
            attempt.kill_at = None
            self._signal(attempt, signal.SIGKILL)

    # -- helpers --------------------------------------------------------------------------
    def _record_launch(self, attempt: RayAttempt, pids: tuple[int, ...]) -> None:
        assert attempt.log_path is not None
        self._launched.append(AttemptLaunch(attempt.job_id, attempt.number, attempt.gpus, pids,
                                            attempt.log_path))
        attempt.launched = True

    # ``_reserve``, ``_signal`` and ``_release`` stay methods: a test without Ray replaces them.
    def _signal(self, attempt: RayAttempt, signum: signal.Signals) -> None:
        attempt.signal(signum)

    def _end(self, attempt: RayAttempt, outcome: Outcome, message: str,
             retryable: bool = True) -> None:
        if attempt in self._stopping:
            self._stopping.remove(attempt)
        self._release(attempt)
        if attempt.launched:
            self._ended.append(AttemptEnd(attempt.job_id, attempt.number, outcome, message,
                                          retryable))

    def _release(self, attempt: RayAttempt) -> None:
        attempt.release(self.ray)
