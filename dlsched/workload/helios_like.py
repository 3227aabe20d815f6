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

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import numpy as np

from dlsched.errors import InputError, InputLocation
from dlsched.workload.job import JobSpec, plain_spec
from dlsched.workload.readers.base import RowContext, iter_csv_rows
from dlsched.workload.trace import Trace

HELIOS_JOBS = 3_362_981  # every job of the four clusters (the summary's ``total`` row)
HELIOS_GPUS = 6_416  # issue 14's figure for the four clusters (the summary's rows add to 6,220)
MAX_JOBS = 100_000_000  # ~2.4 GB of columns: a typo's extra zeros, not a trace


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


SUMMARY_COLUMNS = ("id", "avg_run_time_gpu", "med_run_time_gpu", "avg_gpu_num")
# The other columns of HeliosData's helios_cluster_summary.csv (read, not used).
SUMMARY_EXTRA = frozenset((
    "gpu_num", "job_num", "cpu_job_num", "gpu_job_num", "avg_run_time_cpu", "avg_que_time_cpu",
    "avg_que_time_gpu", "med_run_time_cpu", "med_que_time_cpu", "med_que_time_gpu",
    "med_gpu_num", "complete_rate", "cancel_rate", "fail_rate", "complete_rate_cpu",
    "cancel_rate_cpu", "fail_rate_cpu", "complete_rate_gpu", "cancel_rate_gpu", "fail_rate_gpu",
    "complete_gpu_time", "cancel_gpu_time", "fail_gpu_time"))


def fit_summary(path: Path, cluster: str = "total", max_gpus: int = 64,
                max_seconds: float = 14 * 86400.0) -> ShapeFit:
    """Fit one row (``id`` = ``cluster``) of ``helios_cluster_summary.csv``. A bad file, row
    or value is an ``InputError`` at its file, line and column, as a trace's is."""
    row = _summary_row(path, cluster)
    mean = row.number("avg_run_time_gpu", positive=True)
    median = row.number("med_run_time_gpu", positive=True)
    assert mean is not None and median is not None  # not optional
    if not mean > median:
        raise row.fail("avg_run_time_gpu", f"{mean:g} must exceed med_run_time_gpu {median:g} "
                                           "(a lognormal fit: the mean above the median)")
    counts = tuple(2**i for i in range(int(math.log2(max_gpus)) + 1))
    gpus = row.number("avg_gpu_num")
    assert gpus is not None
    if not counts[0] <= gpus <= counts[-1]:
        raise row.fail("avg_gpu_num", f"mean GPU count {gpus:g} outside {counts[0]}.."
                                      f"{counts[-1]} (powers of two up to max_gpus)")
    return ShapeFit(f"{path.name}:{cluster}", math.log(median),
                    math.sqrt(2.0 * math.log(mean / median)), counts,
                    _geometric_probs(counts, gpus), max_seconds)


def _summary_row(path: Path, cluster: str) -> RowContext:
    """The row whose ``id`` is ``cluster``; every row up to it is checked."""
    ids: list[str] = []
    for row in iter_csv_rows(path, SUMMARY_COLUMNS, allow_extra=SUMMARY_EXTRA):
        if row.problem is not None:
            raise row.fail(row.problem_field, row.problem)
        ids.append(row.text("id") or "")
        if ids[-1] == cluster:
            return row
    if not ids:
        raise InputError(InputLocation(str(path), 2), "no rows (the file has at most a header)")
    raise InputError(InputLocation(str(path)),
                     f"no row with id {cluster!r} (rows: {', '.join(ids)})")


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


def generation_problem(n_jobs: int, gpus: int, load: float, queues: int = 1) -> str | None:
    """What is wrong with ``generate``'s sizes, named as its arguments, or None."""
    for name, value, ok, rule in (
            ("n_jobs", n_jobs, 1 <= n_jobs <= MAX_JOBS, f"1..{MAX_JOBS:,}"),
            ("gpus", gpus, gpus >= 1, ">= 1"), ("load", load, 0 < load <= 10, "in (0, 10]"),
            ("queues", queues, queues >= 1, ">= 1")):
        if not ok:
            return f"{name} must be {rule}, got {value:,}"
    return None


def generate(n_jobs: int, gpus: int, load: float, seed: int, fit: ShapeFit,
             queues: int = 1) -> Trace:
    """A synthetic trace of ``n_jobs`` jobs offering ``load`` to a cluster of ``gpus`` GPUs
    (module docstring); jobs spread uniformly over ``queues`` queues (``vc0``, ...)."""
    problem = generation_problem(n_jobs, gpus, load, queues)
    if problem is not None:
        raise ValueError(problem)
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
