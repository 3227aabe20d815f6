"""SYNTHETIC traces of Helios' size and shape (issue 14): not Helios' jobs, jobs drawn from
distributions fitted to the published per-cluster summaries.

The Helios release (Hu et al., SC'21; HeliosData, CC-BY-4.0) ships per-cluster summaries
(``shared/data/clusters/helios/helios_cluster_summary.csv``): GPU jobs' mean and median run
time and mean GPU count. From one row (``total`` by default: 3.36 M jobs over 6,220 GPUs):

- run time: a lognormal with the row's median (``exp(mu)``) and mean (``exp(mu + sigma^2/2)``),
  so ``sigma = sqrt(2 ln(mean / median))``; clipped to ``[1 s, max_seconds]``;
- GPU count: powers of two ``1..max_gpus`` with ``P(2^i)`` proportional to ``q^i``, ``q`` solved
  (bisection) so the mean equals the row's mean GPU count; drawn independently of run time;
- arrivals: a Poisson process whose rate gives the offered ``load`` (GPU-seconds asked per
  GPU-second of the cluster): ``rate = load x gpus / (E[gpus] x E[clipped run time])``.

The same arguments always give the same trace (NumPy's PCG64 from ``seed``). Jobs are kept as
columns (``SyntheticJobs``): a ``JobSpec`` is made when the simulator reads it, so a trace of
3.4 M jobs costs ~80 MB, not 3.4 M specs.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np

from dlsched.workload.job import JobSpec, plain_spec
from dlsched.workload.trace import Trace

HELIOS_JOBS = 3_362_981  # every job of the four clusters (the summary's ``total`` row)
HELIOS_GPUS = 6_416  # issue 14's figure for the four clusters (the summary's rows add to 6,220)


@dataclass(frozen=True)
class ShapeFit:
    """The fitted distributions (see the module docstring)."""

    source: str
    log_mu: float
    log_sigma: float
    gpu_counts: tuple[int, ...]
    gpu_probs: tuple[float, ...]
    max_seconds: float

    @property
    def mean_gpus(self) -> float:
        return float(np.dot(self.gpu_counts, self.gpu_probs))

    @property
    def mean_seconds(self) -> float:
        """E[min(max(X, 1), max_seconds)] of the lognormal X (the lower clip is negligible)."""
        mu, sigma, cap = self.log_mu, self.log_sigma, math.log(self.max_seconds)
        below = _phi((cap - mu - sigma**2) / sigma)
        return (math.exp(mu + sigma**2 / 2) * below
                + self.max_seconds * (1.0 - _phi((cap - mu) / sigma)))


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def fit_summary(path: Path, cluster: str = "total", max_gpus: int = 64,
                max_seconds: float = 14 * 86400.0) -> ShapeFit:
    """Fit one row (``id`` = ``cluster``) of ``helios_cluster_summary.csv``."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = {row["id"]: row for row in csv.DictReader(handle)}
    if cluster not in rows:
        raise ValueError(f"{path}: no row with id {cluster!r} (rows: {', '.join(rows)})")
    row = rows[cluster]
    mean, median = float(row["avg_run_time_gpu"]), float(row["med_run_time_gpu"])
    if not mean > median > 0:
        raise ValueError(f"{path}: row {cluster}: avg_run_time_gpu {mean} must exceed "
                         f"med_run_time_gpu {median} > 0 (a lognormal fit)")
    counts = tuple(2**i for i in range(int(math.log2(max_gpus)) + 1))
    probs = _geometric_probs(counts, float(row["avg_gpu_num"]))
    return ShapeFit(f"{path.name}:{cluster}", math.log(median),
                    math.sqrt(2.0 * math.log(mean / median)), counts, probs, max_seconds)


def _geometric_probs(counts: Sequence[int], mean: float) -> tuple[float, ...]:
    """``P(counts[i])`` proportional to ``q^i`` with mean ``mean`` (bisection on q)."""
    if not counts[0] <= mean <= counts[-1]:
        raise ValueError(f"mean GPU count {mean} outside {counts[0]}..{counts[-1]}")

    def probs(q: float) -> np.ndarray:
        weights = q ** np.arange(len(counts), dtype=float)
        return weights / weights.sum()

    low, high = 1e-9, 1e3
    for _ in range(200):
        q = math.sqrt(low * high)
        if float(np.dot(counts, probs(q))) < mean:
            low = q
        else:
            high = q
    return tuple(probs(math.sqrt(low * high)).tolist())


class SyntheticJobs(Sequence[JobSpec]):
    """Jobs as columns (submit time, GPU count, run time, queue index), sorted by submit time;
    indexing makes the ``JobSpec``."""

    def __init__(self, submit: np.ndarray, gpus: np.ndarray, seconds: np.ndarray,
                 queue: np.ndarray, queues: Sequence[str], prefix: str) -> None:
        self._submit, self._gpus, self._seconds = submit.tolist(), gpus, seconds
        self._queue, self._queues = queue, tuple(queues)
        self._width = len(str(max(len(submit) - 1, 0)))
        self._prefix = prefix
        self._last: tuple[int, JobSpec] | None = None  # the simulator reads a job 2-3 times

    def __len__(self) -> int:
        return len(self._submit)

    @overload
    def __getitem__(self, index: int) -> JobSpec: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[JobSpec]: ...

    def __getitem__(self, index: int | slice) -> JobSpec | Sequence[JobSpec]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(index)
        last = self._last
        if last is not None and last[0] == index:
            return last[1]
        spec = plain_spec(f"{self._prefix}{index:0{self._width}d}", self._submit[index],
                          self._gpus.item(index), self._seconds.item(index),
                          self._queues[self._queue.item(index)])
        self._last = (index, spec)
        return spec

    def __iter__(self) -> Iterator[JobSpec]:
        return (self[i] for i in range(len(self)))

    @property
    def gpu_seconds(self) -> float:
        return float(np.dot(self._gpus.astype(float), self._seconds))


def generate(n_jobs: int, gpus: int, load: float, seed: int, fit: ShapeFit,
             queues: int = 1) -> Trace:
    """A synthetic trace of ``n_jobs`` jobs offering ``load`` to a cluster of ``gpus`` GPUs
    (module docstring); jobs spread uniformly over ``queues`` queues (``vc0``, ...)."""
    if n_jobs < 1 or gpus < 1 or not 0 < load <= 10 or queues < 1:
        raise ValueError(f"need n_jobs >= 1, gpus >= 1, 0 < load <= 10, queues >= 1 (got "
                         f"{n_jobs}, {gpus}, {load}, {queues})")
    rng = np.random.default_rng(seed)
    rate = load * gpus / (fit.mean_gpus * fit.mean_seconds)  # jobs per second
    gaps = rng.exponential(1.0 / rate, size=n_jobs - 1)
    submit = np.concatenate(([0.0], np.cumsum(gaps)))
    counts = np.asarray(fit.gpu_counts, dtype=np.int64)
    picked = counts[rng.choice(len(counts), size=n_jobs, p=np.asarray(fit.gpu_probs))]
    picked = np.minimum(picked, gpus)
    seconds = np.clip(rng.lognormal(fit.log_mu, fit.log_sigma, size=n_jobs), 1.0,
                      fit.max_seconds)
    seconds = np.round(seconds)  # whole seconds, as the traces record them
    queue = rng.integers(queues, size=n_jobs) if queues > 1 else np.zeros(n_jobs, np.int64)
    name = f"helios-like-{n_jobs}-load{load:g}-seed{seed}"
    jobs = SyntheticJobs(submit, picked, seconds, queue, [f"vc{i}" for i in range(queues)],
                         "syn-")
    return presorted_trace(name, jobs, f"synthetic, fitted to {fit.source}")


def presorted_trace(name: str, jobs: Sequence[JobSpec], source: str) -> Trace:
    """A ``Trace`` over jobs already in submission order with unique ids (the generator's),
    without the copy into a tuple that ``Trace`` makes (it would make every ``JobSpec``)."""
    trace = object.__new__(Trace)
    for key, value in (("name", name), ("jobs", jobs), ("source", source),
                       ("format", "synthetic"), ("throughput", "linear"), ("skipped", 0),
                       ("warnings", ())):
        object.__setattr__(trace, key, value)
    return trace
