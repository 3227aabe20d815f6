"""Pollux's measured step times as a placement-sensitive throughput model (Qiao et al., OSDI'21).

The profiles (T4 GPUs, nodes of 4) give the time of one iteration against the placement (GPUs
per node) and the local batch size. A job keeps its global batch ``spec.batch_size`` whatever its
allocation, so each of ``n`` workers processes ``batch_size / n`` samples per step and

    samples/s(placement) = batch_size / step_time(placement, batch_size / n).

Work unit: ``REFERENCE_SECONDS`` at the requested size. ``rate`` is samples/s on the placement
divided by samples/s on the requested placement (``spec.num_gpus`` packed onto as few 4-GPU
nodes as possible), so a job runs at 1.0 where it asked to, faster with more GPUs (when the
application scales), slower when spread over more nodes. The GPU type is ignored: every
measurement is on T4.

Step time lookup (see docs/throughput-models.md):

1. The placement's multiset of GPUs per node is measured in ``placements.csv`` (up to 4 nodes of
   up to 4 GPUs): the mean over the measured node orders of that multiset.
2. Otherwise, by ``(num_nodes, num_replicas)`` over both files: linear interpolation between the
   neighbouring measured replica counts for a node count (replicas clamped to its measured
   range), and between the neighbouring measured node counts (nodes clamped to at most 16).

Within one measurement, step time interpolates linearly in the local batch size; below the
smallest measured local batch it is the smallest's step time (per-step overhead dominates) and
above the largest it grows in proportion to the local batch (constant time per sample, as with
gradient accumulation).
"""

from __future__ import annotations

import bisect
import csv
import functools
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

from dlsched.perf.model import Placement, register_throughput_model
from dlsched.workload.job import JobSpec

APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")
GPUS_PER_NODE = 4
Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StepCurve:
    """Measured step time (s) against local batch size for one placement or scale."""

    local_bsz: tuple[float, ...]
    step_time: tuple[float, ...]

    def at(self, local_bsz: float) -> float:
        if local_bsz <= self.local_bsz[0]:
            return self.step_time[0]
        if local_bsz >= self.local_bsz[-1]:
            return self.step_time[-1] * local_bsz / self.local_bsz[-1]
        return _interpolate(self.local_bsz, local_bsz, lambda i: self.step_time[i])


def _interpolate(keys: Sequence[float], x: float, value: Callable[[int], float]) -> float:
    """Linear interpolation at ``x`` over sorted ``keys``, clamped to their range."""
    if x <= keys[0]:
        return value(0)
    if x >= keys[-1]:
        return value(len(keys) - 1)
    upper = bisect.bisect_left(keys, x)
    if keys[upper] == x:
        return value(upper)
    weight = (x - keys[upper - 1]) / (keys[upper] - keys[upper - 1])
    return value(upper - 1) + weight * (value(upper) - value(upper - 1))


def _mean_at(curves: Sequence[StepCurve], local_bsz: float) -> float:
    return sum(curve.at(local_bsz) for curve in curves) / len(curves)


@dataclass(frozen=True)
class AppProfile:
    """One application's measurements, keyed by GPU-per-node multiset and by (nodes, replicas)."""

    by_shape: dict[Shape, tuple[StepCurve, ...]]
    by_scale: dict[tuple[int, int], tuple[StepCurve, ...]]

    def step_time(self, shape: Shape, local_bsz: float) -> float:
        if shape in self.by_shape:
            return _mean_at(self.by_shape[shape], local_bsz)
        return self._scale_step_time(len(shape), sum(shape), local_bsz)

    def _scale_step_time(self, nodes: int, replicas: int, local_bsz: float) -> float:
        node_counts = sorted({n for n, _ in self.by_scale})
        return _interpolate(
            node_counts, nodes, lambda i: self._nodes_step_time(node_counts[i], replicas, local_bsz)
        )

    def _nodes_step_time(self, nodes: int, replicas: int, local_bsz: float) -> float:
        counts = sorted(r for n, r in self.by_scale if n == nodes)
        return _interpolate(
            counts, replicas, lambda i: _mean_at(self.by_scale[(nodes, counts[i])], local_bsz)
        )


def _curves(rows: list[dict[str, str]], key: Callable[[dict[str, str]], object]) -> dict:
    points: dict[object, list[tuple[float, float]]] = defaultdict(list)
    for row in rows:
        points[key(row)].append((float(row["local_bsz"]), float(row["step_time"])))
    return {k: StepCurve(*map(tuple, zip(*sorted(v), strict=True))) for k, v in points.items()}


def _read_rows(app: str, filename: str) -> list[dict[str, str]]:
    path = resources.files("dlsched") / "data" / "profiles" / "pollux" / app / filename
    return list(csv.DictReader(path.read_text().splitlines()))


def _shape(placement_digits: str) -> Shape:
    return tuple(sorted((int(d) for d in placement_digits), reverse=True))


@functools.cache
def load_profile(app: str) -> AppProfile:
    """The bundled profile of one application (cached)."""
    if app not in APPS:
        raise KeyError(f"pollux profiles have no application {app!r} (known: {APPS})")
    measured = _curves(_read_rows(app, "placements.csv"), lambda row: row["placement"])
    scalability = _curves(
        _read_rows(app, "scalability.csv"),
        lambda row: (int(row["num_nodes"]), int(row["num_replicas"])),
    )
    by_shape: dict[Shape, list[StepCurve]] = defaultdict(list)
    by_scale: dict[tuple[int, int], list[StepCurve]] = defaultdict(list)
    for digits, curve in measured.items():
        by_shape[_shape(digits)].append(curve)
        by_scale[(len(digits), sum(map(int, digits)))].append(curve)
    for scale, curve in scalability.items():
        by_scale[scale].append(curve)
    return AppProfile(
        {k: tuple(v) for k, v in by_shape.items()}, {k: tuple(v) for k, v in by_scale.items()}
    )


def packed_placement(num_gpus: int, gpus_per_node: int = GPUS_PER_NODE) -> Shape:
    """GPUs per node when ``num_gpus`` are packed onto as few nodes as possible: 10 -> (4, 4, 2)."""
    full, rest = divmod(num_gpus, gpus_per_node)
    return (gpus_per_node,) * full + ((rest,) if rest else ())


@functools.lru_cache(maxsize=65536)
def samples_per_second(app: str, workers_per_node: Shape, global_batch: int) -> float:
    """Training samples/s of ``app`` at global batch ``global_batch`` on this placement."""
    shape = tuple(sorted((w for w in workers_per_node if w > 0), reverse=True))
    if not shape:
        return 0.0
    local_bsz = global_batch / sum(shape)
    return global_batch / load_profile(app.casefold()).step_time(shape, local_bsz)


class PolluxThroughputs:
    """Reference seconds per second from Pollux's profiles; see the module docstring."""

    name = "pollux"

    def __init__(self, gpus_per_node: int = GPUS_PER_NODE) -> None:
        self.gpus_per_node = gpus_per_node

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        if not placement.gpu_types:
            return 0.0
        app, batch = _app_and_batch(spec)
        return samples_per_second(app, placement.workers_per_node(), batch) / self._reference(
            app, batch, spec.num_gpus
        )

    def reference_rate(self, spec: JobSpec) -> float:
        return 1.0

    def _reference(self, app: str, batch: int, num_gpus: int) -> float:
        requested = packed_placement(max(num_gpus, 1), self.gpus_per_node)
        return samples_per_second(app, requested, batch)


def _app_and_batch(spec: JobSpec) -> tuple[str, int]:
    if spec.model is None or spec.batch_size is None:
        raise ValueError(f"job {spec.job_id}: the pollux model needs spec.model and batch_size")
    app = spec.model.casefold()
    if app not in APPS:
        raise KeyError(f"pollux profiles have no application {spec.model!r} (known: {APPS})")
    return app, spec.batch_size


register_throughput_model("pollux", PolluxThroughputs)
