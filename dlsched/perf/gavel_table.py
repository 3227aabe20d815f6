"""Gavel's measured throughputs as a throughput model (Narayanan et al., OSDI'20).

Work is counted in training steps (``WorkUnit.ITERATIONS``): ``rate`` is the steps per second
Gavel measured for the job type ``(spec.model, spec.batch_size)`` on the placement's GPU type at a
scale factor equal to the number of workers. A job type is named as in Gavel's traces,
``"ResNet-18 (batch size 64)"`` -> model ``"ResNet-18"``, batch size ``64``; A3C and CycleGAN
have no batch size (``None``).

Rules for what the table does not measure (see docs/throughput-models.md):

* Scale factors between measured ones (1, 2, 4, 8) interpolate linearly; beyond the largest
  measured one the per-worker rate of the largest stays constant (``rate(m) * n / m``).
  A 0 at a measured point used by that estimate (the job cannot run there) gives 0.
* With ``placement_sensitive=True`` (model ``gavel-placement``) a placement over several nodes
  uses Gavel's ``<type>_unconsolidated`` measurements when the table has multi-worker ones for
  that job type. Off by default: the consolidated table is what Gavel's policies see, and 44 of
  the 165 spread measurements are faster than their consolidated counterparts (noise).
* Mixed GPU types run at the slowest type's rate (synchronous data parallelism).
* Space sharing (``placement.partners``): a worker sharing its GPU with another job runs at
  Gavel's co-located rate of the pair at the job's scale factor (OSDI'20 §3.1); a pair Gavel did
  not measure runs at half its isolated rate (as if the two were time-sliced). The job runs at
  its slowest worker's rate, like mixed types.
"""

from __future__ import annotations

import csv
import functools
import re
from collections import defaultdict
from collections.abc import Mapping
from importlib import resources

from dlsched.perf.model import Placement, register_throughput_model
from dlsched.workload.job import JobSpec

JobType = tuple[str, int | None]
Curve = Mapping[int, float]

WORKER_TYPES = ("k80", "p100", "v100")
SOURCES = {
    "simulation": "simulation_throughputs.json",
    "physical_cluster": "physical_cluster_throughputs.json",
}
# Cluster GPU type names that are the same chip as a measured Gavel worker type.
GPU_ALIASES = {"v100m16": "v100", "v100m32": "v100"}
_UNCONSOLIDATED = "_unconsolidated"
_JOB_TYPE_PATTERN = re.compile(r"^(?P<model>.+?) \(batch size (?P<batch>\d+)\)$")


def parse_job_type(name: str) -> JobType:
    """``"ResNet-18 (batch size 64)"`` -> ``("ResNet-18", 64)``; ``"A3C"`` -> ``("A3C", None)``."""
    match = _JOB_TYPE_PATTERN.match(name.strip())
    if match is None:
        return name.strip(), None
    return match["model"], int(match["batch"])


def job_type_name(model: str, batch_size: int | None) -> str:
    """The inverse of ``parse_job_type``: Gavel's job type string."""
    return model if batch_size is None else f"{model} (batch size {batch_size})"


def _profile_text(filename: str) -> str:
    return (resources.files("dlsched") / "data" / "profiles" / "gavel" / filename).read_text()


def _normalise(job: JobType) -> JobType:
    return job[0].casefold(), job[1]


@functools.cache
def load_isolated(source: str = "simulation") -> Mapping[tuple[str, JobType], Curve]:
    """``(worker_type, job_type) -> {scale_factor: steps/s}`` from the bundled isolated CSV."""
    if source not in SOURCES:
        raise KeyError(f"unknown gavel source {source!r} (known: {sorted(SOURCES)})")
    table: dict[tuple[str, JobType], dict[int, float]] = defaultdict(dict)
    for row in csv.DictReader(_profile_text("derived_isolated_throughputs.csv").splitlines()):
        if row["source"] != SOURCES[source]:
            continue
        batch = int(row["batch_size"]) if row["batch_size"] else None
        key = (row["worker_type"], _normalise((row["model"], batch)))
        table[key][int(row["scale_factor"])] = float(row["steps_per_sec"])
    return dict(table)


@functools.cache
def load_colocated() -> Mapping[tuple[str, int, JobType, JobType], tuple[float, float]]:
    """``(worker_type, scale_factor, job_a, job_b) -> (steps/s of a, of b)``, both orders."""
    table: dict[tuple[str, int, JobType, JobType], tuple[float, float]] = {}
    for row in csv.DictReader(_profile_text("colocated_throughputs.csv").splitlines()):
        job_a = _normalise(parse_job_type(row["job_a"]))
        job_b = _normalise(parse_job_type(row["job_b"]))
        rate_a, rate_b = float(row["steps_per_sec_a"]), float(row["steps_per_sec_b"])
        scale = int(row["scale_factor"])
        table[(row["worker_type"], scale, job_a, job_b)] = (rate_a, rate_b)
        table[(row["worker_type"], scale, job_b, job_a)] = (rate_b, rate_a)
    return table


@functools.cache
def job_types(source: str = "simulation") -> tuple[JobType, ...]:
    """The measured ``(model, batch_size)`` pairs, with the model spelled as in Gavel's traces."""
    found = set()
    for row in csv.DictReader(_profile_text("derived_isolated_throughputs.csv").splitlines()):
        if row["source"] == SOURCES[source]:
            found.add((row["model"], int(row["batch_size"]) if row["batch_size"] else None))
    return tuple(sorted(found, key=lambda job: (job[0], job[1] or 0)))


def estimate(curve: Curve, workers: int) -> float:
    """Steps/s at ``workers`` from measured scale factors (interpolate, then hold per-worker)."""
    if workers in curve:
        return curve[workers]
    scales = sorted(curve)
    lower = max((s for s in scales if s < workers), default=scales[0])
    upper = min((s for s in scales if s > workers), default=None)
    if upper is None:
        return curve[lower] * workers / lower
    if curve[lower] == 0 or curve[upper] == 0:
        return 0.0
    weight = (workers - lower) / (upper - lower)
    return curve[lower] + weight * (curve[upper] - curve[lower])


def worker_type(gpu_type_name: str) -> str:
    """Gavel's worker type for a cluster GPU type name (``"V100"`` -> ``"v100"``)."""
    name = gpu_type_name.casefold()
    name = GPU_ALIASES.get(name, name)
    if name not in WORKER_TYPES:
        # the tuple's repr read "(known: ('k80', 'p100', 'v100'))", with no way forward
        raise KeyError(f"gavel table has no GPU type {gpu_type_name!r} (known: "
                       f"{', '.join(WORKER_TYPES)}): Gavel measured its jobs on those "
                       f"alone; run them on a cluster of these types, e.g. gavel-108")
    return name


class GavelThroughputs:
    """Steps per second from Gavel's measured table; see the module docstring for the rules.

    ``source`` picks Gavel's simulation or physical-cluster measurements; ``placement_sensitive``
    uses the unconsolidated measurements for multi-node placements.
    """

    name = "gavel"

    def __init__(self, source: str = "simulation", placement_sensitive: bool = False) -> None:
        self.table = load_isolated(source)
        physical = "-physical" if source == "physical_cluster" else ""
        self.name = f"gavel{physical}{'-placement' if placement_sensitive else ''}"
        self.source = source
        self.placement_sensitive = placement_sensitive
        self._alone_rates: dict[tuple[object, ...], float] = {}  # ``rate`` without partners
        self._scaled: dict[tuple[JobType, str, int], float] = {}  # ``scaled``, by its args
        self._job_types: dict[tuple[str, int | None], JobType] = {}  # ``job_type``, found

    def job_types(self) -> tuple[JobType, ...]:
        return job_types(self.source)

    def job_type(self, spec: JobSpec) -> JobType:
        """The normalised table key of a spec; KeyError naming it when it is not measured."""
        known = self._job_types.get((spec.model, spec.batch_size))
        if known is not None:  # asked of every active job at each solve: kept once found
            return known
        if spec.model is None:
            raise KeyError(f"job {spec.job_id}: gavel table needs spec.model")
        job = _normalise((spec.model, spec.batch_size))
        if ("v100", job) not in self.table:
            raise KeyError(
                f"gavel table has no job type model={spec.model!r} batch_size={spec.batch_size!r}"
                f" ({job_type_name(spec.model, spec.batch_size)!r})"
            )
        self._job_types[(spec.model, spec.batch_size)] = job
        return job

    def curve(self, job: JobType, gpu_type_name: str, spread: bool = False) -> Curve:
        """Measured steps/s by scale factor of a job type on one GPU type."""
        kind = worker_type(gpu_type_name)
        if spread and self.placement_sensitive:
            unconsolidated = self.table.get((kind + _UNCONSOLIDATED, job), {})
            if any(scale > 1 for scale in unconsolidated):
                return unconsolidated
        return self.table[(kind, job)]

    def scaled(self, job: JobType, gpu_type_name: str, workers: int) -> float:
        """``estimate(curve(job, gpu_type_name), workers)``, kept once computed (the table
        never changes): Gavel's problem asks it of every job class at each solve."""
        key = (job, gpu_type_name, workers)
        known = self._scaled.get(key)
        if known is None:
            known = self._scaled[key] = estimate(self.curve(job, gpu_type_name), workers)
        return known

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        if not placement.gpu_types:
            return 0.0
        spread = len(set(placement.nodes)) > 1
        alone_key = None
        if not placement.partners:  # alone: a function of the job type and GPUs only
            alone_key = (spec.model, spec.batch_size, placement.gpu_types, spread)
            known = self._alone_rates.get(alone_key)
            if known is not None:
                return known
        job = self.job_type(spec)
        workers = placement.num_workers
        alone = {kind: estimate(self.curve(job, kind, spread), workers)
                 for kind in set(placement.gpu_types)}
        if not placement.is_shared:
            rate = min(alone.values())
            if alone_key is not None:
                self._alone_rates[alone_key] = rate
            return rate
        return min(alone[kind] if partner is None
                   else self._shared_rate(spec, partner, kind, workers, alone[kind])
                   for kind, partner in zip(placement.gpu_types, placement.partners,
                                            strict=True))

    def rate_alone(self, spec: JobSpec, gpu_types: tuple[str, ...],
                   nodes: tuple[int, ...]) -> float:
        """``rate(spec, Placement(gpu_types, nodes))`` of a job that shares no GPU and holds
        no host share: the core asks this at each start and resize without building a
        Placement (``Scheduler._launch``); the kept value once ``rate`` has found it."""
        spread = len(nodes) > 1 and len(set(nodes)) > 1
        known = self._alone_rates.get((spec.model, spec.batch_size, gpu_types, spread))
        return known if known is not None else self.rate(spec, Placement(gpu_types, nodes))

    def _shared_rate(self, spec: JobSpec, partner: JobSpec, kind: str, workers: int,
                     alone: float) -> float:
        """Co-located steps/s of ``spec`` beside ``partner`` (half ``alone`` if unmeasured)."""
        try:
            return self.colocated_rate(spec, partner, kind, workers)[0]
        except KeyError:
            return 0.5 * alone

    def reference_rate(self, spec: JobSpec) -> float:
        job = self.job_type(spec)
        workers = max(spec.num_gpus, 1)
        return max(estimate(self.curve(job, kind), workers) for kind in WORKER_TYPES)

    def colocated_rate(
        self, a_spec: JobSpec, b_spec: JobSpec, gpu_type_name: str, scale_factor: int = 1
    ) -> tuple[float, float]:
        """Steps/s of ``a`` and ``b`` space-sharing the same GPU(s), both at ``scale_factor``."""
        key = (worker_type(gpu_type_name), scale_factor, self.job_type(a_spec))
        pair = load_colocated().get((*key, self.job_type(b_spec)))
        if pair is None:
            raise KeyError(
                f"gavel table has no co-located measurement of {a_spec.model!r} "
                f"(batch {a_spec.batch_size}) with {b_spec.model!r} (batch {b_spec.batch_size}) "
                f"on {gpu_type_name} at scale factor {scale_factor}"
            )
        return pair


register_throughput_model("gavel", GavelThroughputs)
register_throughput_model("gavel-physical", lambda: GavelThroughputs(source="physical_cluster"))
register_throughput_model("gavel-placement", lambda: GavelThroughputs(placement_sensitive=True))
