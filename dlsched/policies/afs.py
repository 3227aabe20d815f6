"""AFS, Apathetic Future Share (Hwang et al., *Elastic Resource Sharing for Distributed Deep
Learning*, NSDI'21 §3), as an allocation policy.

Every round each active job's throughput curve comes from the trace's throughput model
(``elastic/speed.py``; AFS measures it online, §4): with ``speed="fitted"`` (default) from the
model's rates at 1, 2, 4, … workers fitted to Optimus's form (``elastic/optimus_fit.py``,
standing in for AFS's online measurements and about ten times cheaper with the ``goodput``
model), with ``speed="exact"`` at every size. Its remaining length is its remaining
work over its throughput at the GPUs handed out so far (on its smallest size while it has
none). GPUs are then handed out one at a time with the AFS-L pairwise rule
(``elastic/afs_rule.py``, which states the rule), and placed on the fewest nodes
(``scheduling/fewest_nodes.py``; AFS's prototype packs a job's workers too, §4).

``afs-p`` is the paper's variant for jobs whose lengths are unknown (AFS-P, §3): the same
pairwise rule and loop, with each job's *attained service* standing in for its remaining
length, as Tiresias does (Gu et al., NSDI'19: DL job lengths are heavy-tailed, so a job that
has received little service is the likelier to be short). The job with less attained service
plays the shorter job ``a`` of each pair. Three choices are ours:
attained service is GPU-seconds received (``Job.attained_service``, Tiresias' 2D measure, not
wall-clock time run), ties go to the earlier arrival, and the order is kept all round (AFS-L
re-orders by remaining time at the GPUs handed out so far; a proxy that is not a remaining
time cannot shrink with GPUs). With no GPUs yet every job's gain is infinite, so the first
GPUs go in order of least attained service, like LAS; after that the rule trades them by
throughput gain exactly as AFS-L does. Ambiguity: the paper's text was not at hand when this
was written and no public AFS-P re-implementation was found, so the proxy (least attained
service as "shorter") is the rule as recalled, not checked line by line.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from dlsched.policies.elastic.afs_rule import afs_allocate
from dlsched.policies.elastic.optimus_fit import fitted_curve
from dlsched.policies.elastic.speed import (
    DEFAULT_MAX_WORKERS,
    ElasticAllocator,
    UsableCache,
    job_bounds,
    usable_gpus,
)
from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.fewest_nodes import place
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import at_least, register_policy
from dlsched.scheduling.state import CycleState

SPEEDS = ("fitted", "exact")
ROUND_SECONDS = 60.0  # the round length is ours (configurable)


class AfsAllocator(ElasticAllocator):
    """AllocatePlugin: AFS-L over measured throughput curves, or AFS-P with
    ``known_lengths=False`` (module docstring)."""

    name = "afs-allocate"

    def __init__(self, elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
                 speed: str = "fitted", known_lengths: bool = True) -> None:
        if speed not in SPEEDS:
            raise ValueError(f"speed must be one of {', '.join(SPEEDS)}, got {speed!r}")
        super().__init__(elastic, max_workers)
        self.speed, self.known_lengths = speed, known_lengths
        if not known_lengths:
            self.name = "afs-p-allocate"

    def allocate(self, state: CycleState) -> Mapping[str, Assignment]:
        jobs, capacity, total = self.begin_round(state)
        if not jobs or total == 0:
            return {}
        usable: UsableCache = {}
        bounds = np.array([job_bounds(j, self.elastic, self.max_workers,
                                      usable_gpus(state, j, capacity, usable)) for j in jobs])
        curves = np.zeros((len(jobs), total + 1))
        for row, job in enumerate(jobs):
            lo, hi = int(bounds[row, 0]), int(bounds[row, 1])
            if lo > hi:
                continue
            curves[row, :hi + 1] = (self.curves.curve(state, job, hi) if self.speed == "exact"
                                    else fitted_curve(self.curves, state, job, lo, hi))
        lengths = (self._lengths(state, jobs, curves, bounds[:, 0]) if self.known_lengths
                   else np.array([j.attained_service(state.now) for j in jobs]))
        counts = afs_allocate(curves, bounds[:, 0], bounds[:, 1], lengths, total,
                              reorder=self.known_lengths)
        return place(state, {j.job_id: int(c) for j, c in zip(jobs, counts, strict=True)},
                     {j.job_id: j for j in jobs}, capacity)

    @staticmethod
    def _lengths(state: CycleState, jobs: list, curves: np.ndarray,
                 lo: np.ndarray) -> np.ndarray:
        """Remaining work over the throughput at the smallest size (``inf`` if it cannot run)."""
        work = np.array([j.remaining_work(state.now) for j in jobs])
        first = curves[np.arange(len(jobs)), np.minimum(lo, curves.shape[1] - 1)]
        with np.errstate(divide="ignore"):
            return np.where(first > 0, work / np.where(first > 0, first, 1.0), np.inf)


@register_policy("afs")
def afs(elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
        round_seconds: float = ROUND_SECONDS, speed: str = "fitted",
        placement: str = "consolidated") -> Profile:
    """AFS (apathetic future share): GPUs one at a time by the AFS-L pairwise rule."""
    at_least(1, max_workers=max_workers)
    allocator = AfsAllocator(elastic, max_workers, speed)
    return Profile("afs", SubmitOrder(), plugins=(allocator,), placement=placement,
                   round_seconds=round_seconds, acts_on_running=True)


@register_policy("afs-p")
def afs_p(elastic: str = "all", max_workers: int = DEFAULT_MAX_WORKERS,
          round_seconds: float = ROUND_SECONDS, speed: str = "fitted",
          placement: str = "consolidated") -> Profile:
    """AFS-P (lengths unknown): the AFS pairwise rule with least attained service (GPU-seconds)
    as the shorter job."""
    at_least(1, max_workers=max_workers)
    allocator = AfsAllocator(elastic, max_workers, speed, known_lengths=False)
    return Profile("afs-p", SubmitOrder(), plugins=(allocator,), placement=placement,
                   round_seconds=round_seconds, acts_on_running=True)
