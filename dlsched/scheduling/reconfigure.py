"""Resilience policies: what a running job does when a node under it fails and no hot spare
takes the node's place (``Scheduler.fail_node``).

- ``restart`` (the default): the job goes back to the queue and restarts at its requested size
  from its last checkpoint once the policy finds room (after the repair, on a full cluster).
- ``elastic``: the job continues at once on its surviving data-parallel replicas and grows
  back, replica by replica, when whole replicas' worth of GPUs are free again (after the
  repair). A replica is ``tp x pp`` GPUs (the planner's configuration for the job's size; 1 GPU
  for a job without a model), consecutive in the job's allocation. Rule for the work, as
  Elastic Horovod (Sergeev & Del Balso 2018, ``hvd.elastic.State``: "restore from the last
  commit, synchronised from a surviving worker") and TorchElastic (restart from the last
  checkpoint) differ: when the model states are replicated across data-parallel ranks (ZeRO
  stage 0, plain DDP) a surviving replica holds everything and only the iteration in flight is
  lost; when they are sharded (ZeRO >= 1, FSDP; Rajbhandari et al. SC'20) the failed replica's
  shard exists only in the checkpoint, so the job re-shards from its last checkpoint and loses
  the work since. The global batch stays the same (the same optimisation), spread over fewer
  replicas: each runs ``ceil(M / dp')`` of the ``M`` micro-batches, so the iteration grows by
  ``(ceil(M / dp') - M / dp)`` stage times (``perf/llm/iteration.py``'s 1F1B).
  Reconfiguring costs the core's restart overhead (re-rendezvous, reload).
- ``oobleck``: Oobleck's re-planning (Jang et al., SOSP'23): pipelines are re-instantiated from
  pre-computed pipeline templates on all surviving nodes (§4: a pipeline short of a template's
  minimum borrows nodes from another or merges with it, so no surviving node idles) and the
  global batch is split across the heterogeneous pipelines in proportion to their throughput
  (§5). Model states are replicated across the pipelines (at least f+1 replicas for f
  simultaneous failures; no ZeRO sharding), so the lost layers are copied from a surviving
  pipeline: no rollback to a checkpoint, only the iteration in flight is lost. Throughput is
  that of the full size times the surviving GPUs' share (a stage's time scales with its layers,
  so a pipeline's throughput is proportional to its nodes), and the full size's is that of
  the fastest configuration without ZeRO sharding (replicated states cost memory: for
  Llama-3-405B on 16,384 H100 it is 8.26 s an iteration against 6.79 s with ZeRO-1), at every
  size, from its first start. A hot spare, when there is one, joins at once the same way
  (a reconfiguration, no rollback). The job needs at least the
  smallest template: the fewest ``tp``-GPU stages that hold the model without ZeRO sharding.
  Repaired nodes are added back (Oobleck re-instantiates on node join). Each reconfiguration
  costs ``reconfigure_seconds`` (an assumption; Oobleck's recovery copies layers over the
  network instead of reloading a checkpoint).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from dlsched.errors import ConfigError
from dlsched.perf.model import Placement, ThroughputModel
from dlsched.workload.job import Job, JobSpec, WorkUnit

if TYPE_CHECKING:
    from dlsched.perf.llm.iteration import Estimate

POLICIES = ("restart", "elastic", "oobleck")


def check_policy(name: str) -> str:
    if name not in POLICIES:
        raise ConfigError(f"resilience policy {name!r}: one of {', '.join(POLICIES)}")
    return name


@dataclass(frozen=True, slots=True)
class Layout:
    """How a job's GPUs split: ``replica_gpus`` per data-parallel replica (what ``elastic``
    drops and adds), ``group_gpus`` that share a node (a tensor-parallel group), whether the
    model states are sharded across replicas, and the fewest GPUs an Oobleck pipeline needs."""

    replica_gpus: int
    group_gpus: int
    sharded_states: bool
    min_gpus: int
    iteration_seconds: float = 0.0  # the LLM configuration at full size (0: no model)
    stage_seconds: float = 0.0
    microbatches: int = 0  # M: micro-batches of the global batch
    dp: int = 1


@dataclass(frozen=True, slots=True)
class Reshape:
    gpus: tuple[int, ...]
    rollback: bool  # back to the last checkpoint (else only the iteration in flight is lost)
    overhead: float


class Reconfigurer:
    def __init__(self, policy: str, throughput: ThroughputModel, restart_overhead: float,
                 reconfigure_seconds: float, gpu_node: list[int], node_type: list[str]) -> None:
        self.policy = check_policy(policy)
        self.gpu_node, self.node_type = gpu_node, node_type
        self.throughput = throughput
        self.restart_overhead = restart_overhead
        self.reconfigure_seconds = reconfigure_seconds
        # The size a policy last gave a job it sizes itself (``JobSpec.is_elastic``: llm-size,
        # Pollux...): the size a failure shrinks it from and it grows back to. A rigid job's
        # is its ``num_gpus``.
        self.sizes: dict[str, int] = {}

    def size_of(self, job: Job) -> int:
        return self.sizes.get(job.job_id, job.spec.num_gpus)

    def sized(self, spec: JobSpec, size: int) -> JobSpec:
        """``spec`` at ``size`` GPUs: the planner's layout of the size the job runs at."""
        return spec if size == spec.num_gpus else replace(spec, num_gpus=size)

    @property
    def overhead(self) -> float:
        return self.restart_overhead if self.policy == "elastic" else self.reconfigure_seconds

    def on_spare(self, moved: tuple[int, ...]) -> Reshape | None:
        """A hot spare took the failed node's place: Oobleck re-instantiates (no rollback);
        the others restart on it from the checkpoint (None: the core's restart path)."""
        return Reshape(moved, False, self.overhead) if self.policy == "oobleck" else None

    def shrink(self, job: Job, down: frozenset[int],
               free: list[list[int]] | None = None) -> Reshape | None:
        """The job's GPUs after a failure of the ``down`` nodes: its surviving GPUs (whole
        replicas for ``elastic``) plus whole groups or replicas of the ``free`` GPUs of up
        nodes (one list per node) up to its size, or None (restart: no whole replica or group
        survives, so nothing holds its state). Free GPUs are taken at once: a job left below
        its size beside idle GPUs waited for a repair or for some other job to finish before
        it grew back."""
        gpu_node = self.gpu_node
        layout = job_layout(self.sized(job.spec, self.size_of(job)), self.type_of(job),
                            self.policy == "oobleck")
        alive = [g for g in job.allocation if gpu_node[g] not in down]
        free = free or []
        if self.policy == "elastic":
            size = layout.replica_gpus
            chunks = [job.allocation[i:i + size] for i in range(0, len(job.allocation), size)]
            survivors = [g for c in chunks if all(gpu_node[g] not in down for g in c) for g in c]
            free = self._with_orphans(alive, set(survivors), free)
            alive = survivors
            rollback = layout.sharded_states
        else:
            rollback = False
        if not alive or len(alive) % layout.group_gpus:
            return None  # no whole replica (group) survives to hold its state: it restarts
        gpus = self._extend(job, layout, tuple(alive), free)
        if len(gpus) < layout.min_gpus or len(gpus) % layout.group_gpus:
            return None
        return Reshape(gpus, rollback, self.overhead)

    def _with_orphans(self, up: list[int], kept: set[int], free: list[list[int]]
                      ) -> list[list[int]]:
        """``free`` (one list per node) with the job's GPUs on up nodes that a broken replica
        leaves (``up`` minus ``kept``) first, each beside its node's free GPUs: they are free
        once the job reshapes, so the same reconfiguration may rebuild a replica from them
        (they were regained only at the next grow-back: a repair or a job's end)."""
        orphans: dict[int, list[int]] = {}
        for gpu in up:
            if gpu not in kept:
                orphans.setdefault(self.gpu_node[gpu], []).append(gpu)
        if not orphans:
            return free
        rest = [node for node in free if node and self.gpu_node[node[0]] not in orphans]
        beside = {self.gpu_node[node[0]]: node for node in free if node}
        return [[*gpus, *beside.get(n, [])] for n, gpus in orphans.items()] + rest

    def grow(self, job: Job, free: list[list[int]]) -> Reshape | None:
        """Add whole groups (``oobleck``) or whole replicas (``elastic``) from ``free`` (free
        GPUs of usable nodes, one list per node) up to the job's requested size."""
        layout = job_layout(self.sized(job.spec, self.size_of(job)), self.type_of(job),
                            self.policy == "oobleck")
        gpus = self._extend(job, layout, job.allocation, free)
        return None if len(gpus) == len(job.allocation) else Reshape(gpus, False,
                                                                    self.overhead)

    def _extend(self, job: Job, layout: Layout, gpus: tuple[int, ...],
                free: list[list[int]]) -> tuple[int, ...]:
        """``gpus`` and as many whole groups (replicas for ``elastic``) of ``free`` as the
        job's size has room for."""
        group = layout.group_gpus
        missing = self.size_of(job) - len(gpus)
        step = layout.replica_gpus if self.policy == "elastic" else group
        pool = [g for node in free for g in node[:len(node) // group * group]]
        take = min(missing, len(pool)) // step * step
        return gpus + tuple(pool[:take]) if take > 0 else gpus

    @property
    def rates_every_launch(self) -> bool:
        """Oobleck's jobs run its replicated-state configuration at every size."""
        return self.policy == "oobleck"

    def rate(self, spec: JobSpec, placement: Placement, size: int | None = None) -> float:
        """Work units per second on a reshaped allocation of a job whose size is ``size``
        (default: its ``num_gpus``; see the module's rules)."""
        n = placement.num_workers
        size = spec.num_gpus if size is None else size
        oobleck = self.policy == "oobleck"
        layout = (job_layout(self.sized(spec, size), placement.gpu_types[0], oobleck) if n
                  else None)
        if layout is None or layout.iteration_seconds == 0 or (n == size and not oobleck):
            return self.throughput.rate(spec, placement)
        if oobleck:
            return n / size / layout.iteration_seconds
        dp = n // layout.replica_gpus
        extra = math.ceil(layout.microbatches / dp) - layout.microbatches / layout.dp
        return 1.0 / (layout.iteration_seconds + extra * layout.stage_seconds)

    def type_of(self, job: Job) -> str:
        """The GPU type the job runs on (its first GPU's)."""
        return self.node_type[self.gpu_node[job.allocation[0]]] if job.allocation else ""

    @staticmethod
    def kept_without_rollback(job: Job, now: float) -> float:
        """Work kept when no checkpoint is reloaded: all but the iteration in flight."""
        done = job.work_done(now)
        return math.floor(done) if job.spec.work_unit is WorkUnit.ITERATIONS else done


@functools.cache
def job_layout(spec: JobSpec, gpu_type: str, replicated: bool = False) -> Layout:
    """The job's replicas from the planner's configuration at its requested size (with
    ``replicated``, the fastest without ZeRO sharding); a job without a built-in model:
    replicas of one tensor-parallel group, states replicated."""
    group = spec.tensor_parallel
    best = _best(spec.model, spec.num_gpus, gpu_type or "H100", group, replicated) \
        if spec.model else None
    if best is None:
        return Layout(group, group, False, group)
    config = best.config
    from dlsched.perf.llm.models import BUILTIN_MODELS

    model = BUILTIN_MODELS[spec.model or ""]
    return Layout(config.tp * config.pp, config.tp, config.zero_stage >= 1,
                  _smallest_template(spec.model or "", gpu_type or "H100", config.tp),
                  best.iteration_seconds, best.stage_seconds,
                  model.global_batch // config.micro_batch, config.dp)


def _best(model: str, gpus: int, gpu_type: str, tp: int, replicated: bool) -> Estimate | None:
    from dlsched.perf.llm.models import BUILTIN_MODELS
    from dlsched.perf.llm.planner import plan
    from dlsched.perf.llm.throughput import FABRICS, MODERN, best_estimate

    if not replicated:
        return best_estimate(model, gpus, gpu_type, tp)
    if model not in BUILTIN_MODELS or gpu_type not in FABRICS:
        return None
    found = [e for e in plan(BUILTIN_MODELS[model], gpus, FABRICS[gpu_type], MODERN)
             if e.config.zero_stage == 0 and (tp == 1 or e.config.tp == tp)]
    return found[0] if found else None


@functools.cache
def _smallest_template(model_name: str, gpu_type: str, tp: int) -> int:
    """GPUs of Oobleck's smallest pipeline template: the fewest stages of ``tp`` GPUs that
    hold the model without sharding its states across pipelines (ZeRO 0)."""
    from dlsched.perf.llm.models import BUILTIN_MODELS
    from dlsched.perf.llm.parallel import MODERN, ParallelConfig
    from dlsched.perf.llm.planner import fitting
    from dlsched.perf.llm.throughput import FABRICS

    model, fabric = BUILTIN_MODELS[model_name], FABRICS[gpu_type]
    for pp in range(1, model.layers + 1):
        if fitting(model, ParallelConfig(1, tp, pp, 1, 0, 1, 0.0), fabric, MODERN):
            return tp * pp
    return tp * model.layers
