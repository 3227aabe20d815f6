"""Build an ``AllocationProblem`` from job specs and Gavel's measured throughput tables
(``from_gavel``), or from any throughput model's rates per GPU type (``from_rates``).

``T[j, t]`` is Gavel's steps/s of the job's type at its scale factor (``spec.num_gpus``) on worker
type ``t`` (``GavelThroughputs`` rules: interpolation between measured scale factors, 0 where the
job cannot run). Jobs with the same (job type, scale factor) form one colocation class; the
co-located rates come from Gavel's pair measurements at that scale factor (pairs of different
scale factors cannot share).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from dlsched.perf.gavel_table import (
    GavelThroughputs,
    JobType,
    load_colocated,
    worker_type,
)
from dlsched.policies.gavel.problem import AllocationProblem, Colocation
from dlsched.workload.job import JobSpec

ClassKey = tuple[JobType, int]


def from_gavel(jobs: Sequence[JobSpec], cluster_counts: Mapping[str, float], *,
               model: GavelThroughputs | None = None, weights: Sequence[float] | None = None,
               remaining: Sequence[float] | None = None, elapsed: Sequence[float] | None = None,
               attained: Sequence[float] | None = None, colocation: bool = True,
               ) -> AllocationProblem:
    """The problem for ``jobs`` on a cluster of ``{gpu type: count}`` (e.g. ``{"k80": 36}``).

    ``remaining`` steps default to each spec's ``work``; ``elapsed`` seconds and ``attained``
    GPU-seconds default to 0.
    """
    model = model or GavelThroughputs()
    types = tuple(worker_type(name) for name in cluster_counts)
    keys = [(model.job_type(spec), max(spec.num_gpus, 1)) for spec in jobs]
    # the classes' order names the co-location classes; without them it changes nothing
    # (the rows are looked up by class), so the ``repr`` sort is skipped
    classes = sorted(set(keys), key=repr) if colocation else list(dict.fromkeys(keys))
    index = {key: i for i, key in enumerate(classes)}
    job_class = np.array([index[key] for key in keys], dtype=np.int64)
    scaled = model.scaled
    rows = np.array([[scaled(job, kind, scale) for kind in types]
                     for job, scale in classes]).reshape(len(classes), len(types))
    n = len(jobs)
    return AllocationProblem(
        job_ids=tuple(spec.job_id for spec in jobs), worker_types=types,
        counts=np.array([float(cluster_counts[name]) for name in cluster_counts]),
        throughput=rows[job_class] if n else np.zeros((0, len(types))),
        scale=np.array([scale for _, scale in keys], dtype=float), weights=weights,
        remaining=np.array([spec.work for spec in jobs] if remaining is None else remaining,
                           dtype=float),
        elapsed=np.zeros(n) if elapsed is None else elapsed,
        attained=np.zeros(n) if attained is None else attained,
        colocation=Colocation(job_class, colocated_rates(classes, types)) if colocation
        else None)


def colocated_rates(classes: Sequence[ClassKey], types: Sequence[str]) -> np.ndarray:
    """``rates[t, a, b]``: steps/s of class ``a`` sharing a type-``t`` GPU with class ``b``."""
    table = load_colocated()
    rates = np.zeros((len(types), len(classes), len(classes)))
    for a, (job_a, scale_a) in enumerate(classes):
        for b, (job_b, scale_b) in enumerate(classes):
            if scale_a != scale_b:
                continue
            for t, kind in enumerate(types):
                pair = table.get((kind, scale_a, job_a, job_b))
                if pair is not None:
                    rates[t, a, b] = pair[0]
    return rates


def from_rates(jobs: Sequence[JobSpec], cluster_counts: Mapping[str, float],
               rates: np.ndarray, *, remaining: Sequence[float] | None,
               elapsed: Sequence[float] | None, attained: Sequence[float] | None
               ) -> AllocationProblem:
    """The problem with ``T[j, t] = rates[j, t]``, each job's rate (work units/s) on type ``t``
    at its requested size, from any throughput model (e.g. the goodput model of Sia's setting:
    Gavel's LP needs only these numbers, §3.1). Worker types keep the cluster's names; no
    co-located rates (Gavel's pair measurements exist only for its own job types). A None
    ``remaining``, ``elapsed`` or ``attained`` stays None (an objective that does not read it)."""
    def floats(values: Sequence[float] | None) -> np.ndarray | None:
        return None if values is None else np.asarray(values, dtype=float)

    n = len(jobs)
    return AllocationProblem(
        job_ids=tuple(spec.job_id for spec in jobs), worker_types=tuple(cluster_counts),
        counts=np.array([float(c) for c in cluster_counts.values()]),
        throughput=np.asarray(rates, dtype=float).reshape(n, len(cluster_counts)),
        scale=np.array([max(spec.num_gpus, 1) for spec in jobs], dtype=float),
        remaining=floats(remaining), elapsed=floats(elapsed), attained=floats(attained))
