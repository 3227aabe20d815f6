"""Run one tenant scenario through the real ``run_cycle`` with ``with_tenants(fifo)``.

    R("b1", "b", 4, prio=0, started=0)    a running job (GPUs taken in node order)
    W("a1", "a", 4, prio=0, submit=0)     a waiting job
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import yaml
from builders import make_cluster

from dlsched.cluster.cluster import Cluster
from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import fifo
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.state import ClusterSnapshot, whole_free_per_node
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.tenancy.reasons import Pending, Reason
from dlsched.workload.job import Job, JobSpec, JobStatus


@dataclass(frozen=True)
class R:
    job_id: str
    queue: str
    gpus: int
    prio: int = 0
    started: float = 0.0
    gpu_type: str | None = None  # place it on nodes of this type


@dataclass(frozen=True)
class W:
    job_id: str
    queue: str
    gpus: int
    prio: int = 0
    submit: float = 0.0
    preemptions: int = 0
    cpus_per_gpu: float = 0.0
    memory_gb: float = 0.0


@dataclass(frozen=True)
class Outcome:
    admitted: frozenset[str]
    evicted: frozenset[str]
    pending: Mapping[str, Reason] = field(default_factory=dict)
    gpu_types: Mapping[str, str] = field(default_factory=dict)  # admitted job -> its GPU type


LAST_PENDING: dict[str, Pending] = {}  # the last scenario's structured reasons


def cq(name: str, gpu: Any, cohort: str | None = "co", flavor: str = "f",
       **extra: Any) -> dict[str, Any]:
    """A cluster-queue entry; ``gpu`` is a number or a quota mapping."""
    out: dict[str, Any] = {"name": name, "quotas": {flavor: {"gpu": gpu}}}
    if cohort:
        out["cohort"] = cohort
    out.update(extra)
    return out


def config_yaml(queues: Sequence[dict[str, Any]], **top: Any) -> str:
    doc: dict[str, Any] = {"flavors": top.pop("flavors", [{"name": "f"}]),
                           "cluster_queues": list(queues), **top}
    return yaml.safe_dump(doc, sort_keys=False)


def cohort_yaml(quotas: Sequence[int], strict: int | None = None) -> str:
    """The random-workload tests' tenants: one flavor ``any``, cluster queues q0, q1, ... of
    these GPU quotas in one cohort ``all`` (reclaim any, 300 s minimum runtime), queue number
    ``strict`` StrictFIFO, local queue ``team-x`` of q0, fair sharing (half-life one hour)."""
    queues = [{"name": f"q{i}", "cohort": "all", "quotas": {"any": {"gpu": quota}},
               "preemption": {"reclaim_within_cohort": "any", "min_runtime": 300}}
              for i, quota in enumerate(quotas)]
    if strict is not None:
        queues[strict]["queueing_strategy"] = "StrictFIFO"
    doc = {"flavors": [{"name": "any"}], "cohorts": [{"name": "all"}],
           "cluster_queues": queues,
           "local_queues": [{"name": "team-x", "cluster_queue": "q0"}],
           "fair_sharing": {"enabled": True, "usage_half_life": 3600}}
    return yaml.safe_dump(doc, sort_keys=False)


def _running(cluster: Cluster, free: np.ndarray, spec: R) -> Job:
    job = Job(JobSpec(spec.job_id, 0.0, spec.gpus, 1e6, queue=spec.queue, priority=spec.prio))
    nodes = [i for i, n in enumerate(cluster.nodes)
             if spec.gpu_type is None or n.gpu_type == spec.gpu_type]
    gpus = [g for g in range(cluster.num_gpus)
            if free[g] >= 1.0 and int(cluster.gpu_node[g]) in nodes][:spec.gpus]
    assert len(gpus) == spec.gpus, f"no room for running job {spec.job_id}"
    free[gpus] = 0.0
    job.status, job.allocation, job.shares = JobStatus.RUNNING, tuple(gpus), (1.0,) * len(gpus)
    job.run_started = job.attained_time = job.progress_time = spec.started
    return job


def _waiting(spec: W, now: float) -> Job:
    job = Job(JobSpec(spec.job_id, spec.submit, spec.gpus, 100.0, queue=spec.queue,
                      priority=spec.prio, cpus_per_gpu=spec.cpus_per_gpu,
                      memory_gb_per_gpu=spec.memory_gb))
    if spec.preemptions:
        job.status, job.preemptions, job.queued_since = JobStatus.PREEMPTED, spec.preemptions, now
    return job


def run_scenario(text: str, running: Sequence[R], waiting: Sequence[W], now: float = 100.0,
                 cluster: Cluster | None = None) -> Outcome:
    cluster = cluster or make_cluster(nodes=4, gpus=4)
    free = np.ones(cluster.num_gpus)
    run_jobs = [_running(cluster, free, spec) for spec in running]
    wait_jobs = tuple(_waiting(spec, now) for spec in waiting)
    snapshot = ClusterSnapshot(cluster, now, free, whole_free_per_node(cluster, free),
                               np.zeros(cluster.num_nodes, dtype=np.int64), tuple(run_jobs),
                               wait_jobs, LinearScaling())
    profile = with_tenants(fifo(strict=False), parse_tenants(text))
    result = run_cycle(profile, snapshot)
    plugin = profile.queue_sort
    assert isinstance(plugin, TenantAdmission)
    LAST_PENDING.clear()
    LAST_PENDING.update(plugin.pending)
    admitted = {s.job_id for s in result.starts}
    types = {s.job_id: cluster.nodes[int(cluster.gpu_node[s.gpus[0]])].gpu_type
             for s in result.starts}
    pending = {j.job_id: plugin.pending[j.job_id].reason for j in wait_jobs
               if j.job_id not in admitted}
    return Outcome(frozenset(admitted), frozenset(p.job_id for p in result.preemptions),
                   pending, types)


def expect(admitted: Sequence[str] = (), evicted: Sequence[str] = (),
           pending: Mapping[str, Reason] | None = None, **kw: Any) -> Outcome:
    return Outcome(frozenset(admitted), frozenset(evicted), dict(pending or {}), **kw)


def without_types(outcome: Outcome) -> Outcome:
    return replace(outcome, gpu_types={})


def assert_same_books(books: list[Any], want: list[Any]) -> None:
    """Every cycle's pending book and fair-sharing history (``books``: (time, book, history)
    per cycle) are those of a reference run (``want``: the job-by-job walk, or victims
    without scopes) at the same time. The run may leave out cycles that the reference ran (a
    quiet cycle asks no wake-up for the ends of protection, nor Tiresias for demotions that
    matter to no one); each cycle left out changed no book (its book is the one before it),
    and the history of the next cycle holds the same values, to the bit. A time may have a
    second cycle (a reclaim deferred: ``TenantAdmission._deferred``); its last is compared."""
    ran = {time: (book, history) for time, book, history in books}
    assert len(books) - len(ran) <= sum(  # one cycle per time, or two where a reclaim waited
        1 for _, book, _ in books if any(isinstance(p, tuple) and Reason.RECLAIM_DEFERRED in p
                                         for p in book.values()))
    before = None
    for time, book, history in [*{time: (time, book, history)
                                  for time, book, history in want}.values()]:
        if time in ran:
            assert ran[time] == (book, history), f"cycle at t={time}"
        else:
            assert before is not None and book == before, f"left-out cycle at t={time}"
        before = book
    assert ran.keys() <= {time for time, _, _ in want}
