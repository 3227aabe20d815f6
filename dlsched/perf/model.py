"""The throughput-model interface and the duration-based linear model.

A model answers ``rate(spec, placement)``: work units per second for a job whose workers sit where
``placement`` says (GPU type and node of each worker, in allocation order, and the job sharing
each worker's GPU, if any; a model that ignores ``partners`` rates a shared job as if alone).
Models are registered by name; a trace names the one its jobs need (``Trace.throughput``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from dlsched.cluster.gpu_types import gpu_type
from dlsched.workload.job import HostShare, JobSpec, WorkUnit


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a job's workers run: the GPU type and node index of each worker, and, when GPUs
    are space-shared, the spec of the job each worker shares its GPU with (``None``: alone).
    ``partners`` is empty when no worker shares (the common case). ``host``: the CPUs and
    memory each worker holds when a policy decided them (Synergy); None: the spec's."""

    gpu_types: tuple[str, ...]
    nodes: tuple[int, ...]
    partners: tuple[JobSpec | None, ...] = ()
    host: HostShare | None = None

    @property
    def is_shared(self) -> bool:
        return any(p is not None for p in self.partners)

    @property
    def num_workers(self) -> int:
        return len(self.gpu_types)

    def workers_per_node(self) -> tuple[int, ...]:
        """Workers on each used node, largest first (Pollux's placement string, e.g. (2, 2))."""
        return tuple(sorted(Counter(self.nodes).values(), reverse=True))

    @classmethod
    def single_node(cls, gpu_type_name: str, workers: int) -> Placement:
        return cls((gpu_type_name,) * workers, (0,) * workers)


class ThroughputModel(Protocol):
    name: str

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        """Work units per second on this allocation; 0 when the job cannot run there."""
        ...

    def reference_rate(self, spec: JobSpec) -> float:
        """Rate at the requested size on the best GPU type (for oracle duration estimates)."""
        ...


class LinearScaling:
    """Duration traces: work is seconds at the requested GPU count on the reference type.

    Speed scales linearly with the number of workers (``n / requested``) and, on heterogeneous
    clusters, with the slowest worker's ``relative_speed`` divided by the reference type's
    (synchronous data parallelism runs at the pace of the slowest worker).
    """

    name = "linear"

    def __init__(self, reference_type: str | None = None) -> None:
        self.reference_speed = gpu_type(reference_type).relative_speed if reference_type else None
        # Without a reference type the rate follows the worker count alone: the core asks
        # this instead of building a Placement per start (``Scheduler._launch``).
        # (Not for a subclass with a rate of its own, e.g. ``LlmThroughput``.)
        plain = self.reference_speed is None and type(self).rate is LinearScaling.rate
        self.rate_by_count = self._by_count if plain else None

    @staticmethod
    def _by_count(spec: JobSpec, workers: int) -> float:
        return workers / max(spec.num_gpus, 1)

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        gpu_types = placement.gpu_types
        if not gpu_types:
            return 0.0
        workers = len(gpu_types)
        requested = max(spec.num_gpus, 1)
        if self.reference_speed is None:
            return self._by_count(spec, workers)
        slowest = min(gpu_type(t).relative_speed for t in gpu_types)
        return workers / requested * slowest / self.reference_speed

    def reference_rate(self, spec: JobSpec) -> float:
        return 1.0


MODEL_FACTORIES: dict[str, Callable[[], ThroughputModel]] = {"linear": LinearScaling}
_LAZY_FACTORIES = {"goodput": ("dlsched.perf.goodput.throughput_model", "GoodputThroughputs"),
                   "goodput-sia": ("dlsched.perf.goodput.throughput_model", "with_sia_fits"),
                   "goodput-fixed": ("dlsched.perf.goodput.throughput_model", "fixed_batch"),
                   "goodput-measured": ("dlsched.perf.goodput.measured",
                                        "MeasuredGoodputThroughputs"),
                   "goodput-measured-fit": ("dlsched.perf.goodput.fitted_choice",
                                            "FittedChoiceGoodputThroughputs"),
                   "llm": ("dlsched.perf.llm.throughput", "LlmThroughput"),
                   "interference": ("dlsched.perf.interference", "InterferenceThroughputs"),
                   "interference-mps": ("dlsched.perf.interference", "mps_model"),
                   "gavel-interference": ("dlsched.perf.interference", "gavel_model"),
                   "synergy": ("dlsched.perf.synergy", "SynergyThroughputs")}


# The unit of ``spec.work`` each built-in model rates (docs/throughput-models.md's table), so
# that ``--throughput`` cannot run a trace's iterations as seconds; a model not named here (a
# user's, or one a reproduction times its own way) is not checked.
WORK_UNITS: dict[str, WorkUnit] = {
    **dict.fromkeys(("gavel", "gavel-physical", "gavel-placement", "gavel-interference", "llm"),
                    WorkUnit.ITERATIONS),
    **dict.fromkeys(("linear", "pollux", "interference", "interference-mps", "synergy",
                     "goodput", "goodput-sia", "goodput-fixed"), WorkUnit.REFERENCE_SECONDS)}


def register_throughput_model(name: str, factory: Callable[[], ThroughputModel]) -> None:
    MODEL_FACTORIES[name] = factory


def get_throughput_model(name: str) -> ThroughputModel:
    _load_builtin_models()
    if name not in MODEL_FACTORIES:
        from dlsched.wording import did_you_mean

        # the known names as every other listing gives them, not a Python list's repr
        known = ", ".join(sorted(MODEL_FACTORIES))
        raise KeyError(f"unknown throughput model {name!r} (known: {known})"
                       f"{did_you_mean(name, MODEL_FACTORIES)}")
    return MODEL_FACTORIES[name]()


def _load_builtin_models() -> None:
    import importlib

    for module in ("gavel_table", "pollux_table", "pollux_progress"):
        try:
            importlib.import_module(f"dlsched.perf.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"dlsched.perf.{module}":
                raise
    for name, (module, factory) in _LAZY_FACTORIES.items():
        if name not in MODEL_FACTORIES:
            register_throughput_model(name, getattr(importlib.import_module(module), factory))
