"""A MIG job's placement in a scheduling cycle (``book.py`` keeps the instances): the GPUs of
the nodes the job's filters allow that are MIG-capable and either in MIG mode or wholly free;
the book's placement chooses the GPU and start slice. A large profile that fits nowhere asks
for a drain (MIG-aware placement)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from dlsched.mig.book import EPS, MigBook
from dlsched.scheduling.framework import SUCCESS, Status, unschedulable

if TYPE_CHECKING:
    from dlsched.cluster.cluster import Cluster
    from dlsched.scheduling.state import CycleState
    from dlsched.workload.job import Job, JobSpec


def place_mig(state: CycleState, job: Job, mask: np.ndarray) -> tuple[tuple[int, ...], Status]:
    """One instance of the job's profile (a MIG job has one worker), booked in the cycle."""
    book: MigBook | None = state.mig
    name = job.spec.mig_profile
    assert name is not None
    if book is None:
        return (), unschedulable("mig", "no MIG book (the core made none)")
    nodes = np.flatnonzero(mask)
    down = state.snapshot.down_nodes
    if down:
        nodes = np.array([n for n in nodes.tolist() if n not in down], dtype=np.int64)
    candidates = [g for g in book.capable_gpus(nodes, name)
                  if g in book.gpus or state.free[g] >= 1.0 - EPS]
    choice = book.choose(candidates, name)
    if choice is None:
        drained = book.request_drain(candidates, name, job.job_id)
        why = f"no MIG-capable GPU has room for a {name} instance"
        return (), unschedulable("mig", why if drained is None
                                 else f"{why}; draining GPU {drained} for it")
    gpu, start = choice
    book.planned[job.job_id] = (gpu, start)
    state.take((gpu,), job.spec.gpu_share, job.spec)
    return (gpu,), SUCCESS


def pin_mig_types(cluster: Cluster, spec: JobSpec) -> JobSpec:
    """A MIG job's spec allowed only the cluster's GPU types that offer its profile (among
    those it names), so that every policy, whatever way it picks nodes, leaves the other
    types alone; unchanged when no such type is left (the job can never run, and fails)."""
    from dlsched.mig.offered import offering_types

    assert spec.mig_profile is not None
    offering = offering_types(cluster.type_names, spec.mig_profile, spec.gpu_types)
    if not offering or tuple(offering) == spec.gpu_types:
        return spec
    return replace(spec, gpu_types=tuple(offering))


def mig_workers(book_or_cluster: object, job: Job, mask: np.ndarray) -> int:
    """Workers of a MIG job the cluster could ever host: one per GPU whose type offers its
    profile, on the nodes its filters allow (a MIG job asks for one)."""
    from dlsched.cluster.cluster import Cluster

    book = (MigBook(book_or_cluster) if isinstance(book_or_cluster, Cluster)
            else book_or_cluster)
    assert isinstance(book, MigBook) and job.spec.mig_profile is not None
    return len(book.capable_gpus(np.flatnonzero(mask), job.spec.mig_profile))
