"""Co-location interference: how fast a job runs when another job shares its GPU.

``InterferenceThroughputs`` wraps a base model (the job's speed alone) and slows each worker
that shares its GPU (``Placement.partners``) by a factor in [0, 1]; the job runs at its slowest
worker's pace (synchronous data parallelism). The factor of job ``a`` beside ``b``:

1. **Measured pair** (Gavel, Narayanan et al. OSDI'20 §3.1): when the base model is Gavel's
   table and Gavel measured ``a`` beside ``b`` on this GPU type at ``a``'s scale factor, the
   measured co-located steps/s divided by ``a``'s isolated steps/s. A measured 0 is a pair that
   does not fit in GPU memory (Gavel's profiler records OOM as 0).
2. **Utilization model** otherwise, one parameter per job type: ``u`` in (0, 1], the share of
   the GPU's compute the job keeps busy when alone (its SM utilization).

   - ``sharing="time-slice"`` (the default CUDA scheduler): one context runs at a time; a pair
     whose demands ``u_a + u_b`` exceed the GPU is served in proportion, and switching contexts
     costs ``switch_overhead``: ``f_a = (1 - switch_overhead) * min(1, 1 / (u_a + u_b))``.
   - ``sharing="mps"``: kernels of both clients run at once, each capped at its compute share
     ``s`` (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` = the job's ``gpu_share``; 1 for a whole-GPU
     job); a client demands ``d = min(u, s)`` and the GPU serves demands in proportion when they
     exceed it: ``f_a = (1 - mps_overhead) * (d_a / u_a) * min(1, 1 / (d_a + d_b))``. A capped
     job is slower than alone even without a partner: MPS compute shares are honoured.

   ``u`` comes from ``utilization`` (by model name, case-insensitive), else, for Gavel job types,
   from Gavel's self-pair measurement on V100 (``fitted_utilization``), else
   ``default_utilization`` (1.0: a job that saturates the GPU, so two halve each other).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from dlsched.perf.gavel_table import (
    GavelThroughputs,
    estimate,
    load_colocated,
    load_isolated,
    worker_type,
)
from dlsched.perf.model import LinearScaling, Placement, ThroughputModel
from dlsched.workload.job import JobSpec

SHARING_MODES = ("time-slice", "mps")
FAULT_DOMAINS = ("gpu", "client")  # what an MPS client's crash takes down (fault_spreads)
SWITCH_OVERHEAD = 0.05
MPS_OVERHEAD = 0.02


@functools.cache
def fitted_utilization() -> Mapping[str, float]:
    """Per Gavel model (lower-case), ``u`` fitted from Gavel's V100 self-pairs at scale factor
    1 under the time-slicing rule (``f = (1 - o) / (2 u)`` when ``2u > 1``, so ``u = (1 - o) /
    (2 f)``), averaged over the model's batch sizes and clipped to [0.05, 1]."""
    isolated = load_isolated()
    found: dict[str, list[float]] = {}
    for (kind, scale, a, b), (rate, _) in load_colocated().items():
        alone = isolated.get((kind, a), {}).get(1, 0.0)
        if kind != "v100" or scale != 1 or a != b or alone <= 0 or rate <= 0:
            continue
        u = (1 - SWITCH_OVERHEAD) / (2 * rate / alone)
        found.setdefault(a[0], []).append(min(1.0, max(0.05, u)))
    return {model: sum(us) / len(us) for model, us in sorted(found.items())}


class InterferenceThroughputs:
    """A base throughput model slowed by co-location; see the module docstring for the rules."""

    def __init__(self, base: ThroughputModel | None = None, sharing: str = "time-slice",
                 utilization: Mapping[str, float] | None = None,
                 default_utilization: float = 1.0, switch_overhead: float = SWITCH_OVERHEAD,
                 mps_overhead: float = MPS_OVERHEAD, fault_domain: str = "gpu") -> None:
        if fault_domain not in FAULT_DOMAINS:
            raise ValueError(f"fault_domain must be one of {FAULT_DOMAINS}, got "
                             f"{fault_domain!r}")
        if sharing not in SHARING_MODES:
            raise ValueError(f"sharing must be one of {SHARING_MODES}, got {sharing!r}")
        for name, u in {**(utilization or {}), "default": default_utilization}.items():
            if not 0 < u <= 1:
                raise ValueError(f"utilization of {name!r} must be in (0, 1], got {u}")
        for name, value in (("switch_overhead", switch_overhead),
                            ("mps_overhead", mps_overhead)):
            if not 0 <= value < 1:
                raise ValueError(f"{name} must be in [0, 1), got {value}")
        self.base = base if base is not None else LinearScaling()
        self.sharing = sharing
        self.utilization = {k.casefold(): v for k, v in (utilization or {}).items()}
        self.default_utilization = default_utilization
        self.switch_overhead, self.mps_overhead = switch_overhead, mps_overhead
        # Under MPS, what a client's crash takes down: "gpu" (every client on its GPUs) or
        # "client" (only itself; an option for what-ifs). Time-slicing: always the client.
        self.fault_domain = fault_domain
        suffix = "" if sharing == "time-slice" else "-mps"
        self.name = f"{getattr(self.base, 'name', 'base')}-interference{suffix}"

    def job_utilization(self, spec: JobSpec) -> float:
        model = (spec.model or "").casefold()
        if model in self.utilization:
            return self.utilization[model]
        if isinstance(self.base, GavelThroughputs):
            return fitted_utilization().get(model, self.default_utilization)
        return self.default_utilization

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        alone = self.base.rate(spec, Placement(placement.gpu_types, placement.nodes, (),
                                               placement.host))
        if alone <= 0:
            return 0.0
        workers = placement.num_workers
        partners = placement.partners or (None,) * workers
        factor = min(self.speed(spec, partner, kind, workers)
                     for kind, partner in zip(placement.gpu_types, partners, strict=True))
        return alone * factor

    def speed(self, spec: JobSpec, partner: JobSpec | None, gpu_type: str,
              workers: int = 1) -> float:
        """The factor in [0, 1] a worker of ``spec`` runs at beside ``partner`` (None:
        alone) on ``gpu_type``, the job having ``workers`` workers."""
        measured = self._measured(spec, partner, gpu_type, workers)
        if measured is not None:
            return measured
        u_a = self.job_utilization(spec)
        if self.sharing == "time-slice":
            if partner is None:
                return 1.0
            u_b = self.job_utilization(partner)
            return (1 - self.switch_overhead) * min(1.0, 1.0 / (u_a + u_b))
        d_a = min(u_a, spec.gpu_share)
        d_b = 0.0 if partner is None else min(self.job_utilization(partner), partner.gpu_share)
        overhead = 0.0 if partner is None else self.mps_overhead
        return (1 - overhead) * (d_a / u_a) * min(1.0, 1.0 / (d_a + d_b))

    def pair_speeds(self, a: JobSpec, b: JobSpec, gpu_type: str, workers: int = 1
                    ) -> tuple[float, float]:
        """Both jobs' factors when they share ``workers`` GPUs of ``gpu_type``."""
        return (self.speed(a, b, gpu_type, workers), self.speed(b, a, gpu_type, workers))

    def _measured(self, spec: JobSpec, partner: JobSpec | None, gpu_type: str,
                  workers: int) -> float | None:
        if partner is None or not isinstance(self.base, GavelThroughputs):
            return None
        try:
            kind = worker_type(gpu_type)
            a, b = self.base.job_type(spec), self.base.job_type(partner)
        except KeyError:
            return None
        pair = load_colocated().get((kind, workers, a, b))
        alone = estimate(self.base.curve(a, gpu_type), workers)
        if pair is None or alone <= 0:
            return None
        return min(1.0, pair[0] / alone)

    def reference_rate(self, spec: JobSpec) -> float:
        return self.base.reference_rate(spec)


def fault_spreads(model: ThroughputModel) -> bool:
    """Whether a crash of one job's worker takes down the jobs sharing its GPU: under MPS
    with the GPU as fault domain (the default; NVIDIA MPS docs, "error containment": a fatal
    exception of one client terminates the clients on the GPUs it shares). Time-slicing keeps
    each job in its own context: a crash ends only that job."""
    return (isinstance(model, InterferenceThroughputs) and model.sharing == "mps"
            and model.fault_domain == "gpu")


def interference_of(model: ThroughputModel) -> InterferenceThroughputs:
    """``model`` itself when it models interference, else the utilization model over it
    (what a policy predicts with when the run's model ignores co-location)."""
    if isinstance(model, InterferenceThroughputs):
        return model
    return InterferenceThroughputs(model)


def mps_model() -> InterferenceThroughputs:
    """The ``interference-mps`` model: duration traces, MPS sharing."""
    return InterferenceThroughputs(sharing="mps")


def gavel_model() -> InterferenceThroughputs:
    """The ``gavel-interference`` model: Gavel's table, measured pairs first."""
    return InterferenceThroughputs(GavelThroughputs())
