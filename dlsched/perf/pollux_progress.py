"""The ``pollux-progress`` throughput model: a fixed-batch job's speed on any placement as the
Pollux artifact's simulator computes it (petuum/adaptdl osdi21-artifact, ``simulator.py``
``Job.step`` and ``applications.py`` ``get_throughput``).

Work unit: reference seconds of the artifact's progress target (``--work-definition progress``,
``workload/readers/pollux_work.py``), at the job's batch on its requested GPUs packed four per
node. On a placement of ``n`` GPUs the job splits its batch as the artifact does (per-GPU
micro-batch, gradient accumulation, one accumulation step forced on a single GPU); one step
takes the measured step time plus its compute part again per accumulation step, so the
all-reduce is paid once a step (the ``pollux`` table instead scales the whole step time above
the largest measured per-GPU batch). ``rate = seconds(reference) / seconds(placement)``.

Step and all-reduce times of a placement: its row in ``placements.csv`` (GPUs per node,
interpolated in the per-GPU batch) when measured; otherwise the artifact's fallback, linear
interpolation in (nodes, replicas, per-GPU batch) over the measured placements (mean per
point) and ``scalability.csv``, nodes capped at 16 (``scipy``'s ``LinearNDInterpolator``).
The order of GPUs per node is taken ascending (the artifact uses the smallest rotation of
its allocation order).
"""

from __future__ import annotations

import csv
import functools
from collections import defaultdict
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from dlsched.perf.model import Placement, register_throughput_model
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.pollux_work import (
    epoch_ends,
    placement_epoch_seconds,
    placement_seconds,
    progress_seconds,
    remaining_steps,
    step_seconds,
)

if TYPE_CHECKING:  # SciPy loads on first use: every run registers this model (~0.5 s)
    from scipy.interpolate import LinearNDInterpolator


def _rows(app: str, name: str) -> list[dict[str, str]]:
    path = resources.files("dlsched") / "data" / "profiles" / "pollux" / app / name
    return list(csv.DictReader(path.read_text().splitlines()))


@functools.cache
def _measured(app: str) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    by_digits: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for row in _rows(app, "placements.csv"):
        by_digits[row["placement"]].append(
            (float(row["local_bsz"]), float(row["step_time"]), float(row["sync_time"])))
    return {k: tuple(np.array(c) for c in zip(*sorted(v), strict=True))  # type: ignore[misc]
            for k, v in by_digits.items()}


@functools.cache
def _fallback(app: str) -> LinearNDInterpolator:
    from scipy.interpolate import LinearNDInterpolator

    points: dict[tuple[int, int, float], list[tuple[float, float]]] = defaultdict(list)
    for row in _rows(app, "placements.csv"):
        digits = row["placement"]
        key = (len(digits), sum(map(int, digits)), float(row["local_bsz"]))
        points[key].append((float(row["step_time"]), float(row["sync_time"])))
    xs = [list(k) for k in points]
    ys = [list(np.mean(v, axis=0)) for v in points.values()]
    for row in _rows(app, "scalability.csv"):
        xs.append([int(row["num_nodes"]), int(row["num_replicas"]), float(row["local_bsz"])])
        ys.append([float(row["step_time"]), float(row["sync_time"])])
    return LinearNDInterpolator(np.array(xs, dtype=float), np.array(ys, dtype=float))


def step_sync(app: str, shape: tuple[int, ...], micro: float,
              ordered: bool = False) -> tuple[float, float]:
    """Step and all-reduce seconds of one micro-step of ``micro`` samples per GPU; the
    measured row of ``shape`` with its GPUs per node ascending, or as given when ``ordered``."""
    digits = "".join(str(n) for n in (shape if ordered else sorted(shape)))
    measured = _measured(app).get(digits)
    if measured is not None:
        local, step, sync = measured
        return float(np.interp(micro, local, step)), float(np.interp(micro, local, sync))
    step_s, sync_s = _fallback(app)([min(len(shape), 16), sum(shape), micro])[0]
    packed = _packed(sum(shape))
    if not np.isfinite(step_s) and packed != tuple(sorted(shape)):
        return step_sync(app, packed, micro)  # outside the measured hull: as if packed
    return float(step_s), float(sync_s)


def step_sync_many(app: str, shape: tuple[int, ...],
                   micros: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``step_sync`` at each of ``micros`` (one interpolation for all)."""
    digits = "".join(str(n) for n in sorted(shape))
    measured = _measured(app).get(digits)
    if measured is not None:
        local, step, sync = measured
        return np.interp(micros, local, step), np.interp(micros, local, sync)
    points = np.column_stack([np.full(len(micros), min(len(shape), 16)),
                              np.full(len(micros), sum(shape)), micros])
    values = _fallback(app)(points)
    step_s, sync_s = values[:, 0], values[:, 1]
    outside = ~np.isfinite(step_s)
    packed = _packed(sum(shape))
    if outside.any() and packed != tuple(sorted(shape)):  # as if packed (step_sync)
        step_p, sync_p = step_sync_many(app, packed, micros[outside])
        step_s, sync_s = step_s.copy(), sync_s.copy()
        step_s[outside], sync_s[outside] = step_p, sync_p
    return step_s, sync_s


def _packed(replicas: int) -> tuple[int, ...]:
    full, rest = divmod(replicas, 4)
    return tuple(sorted((4,) * full + ((rest,) if rest else ())))


class PolluxProgressThroughputs:
    """Reference seconds per second as the Pollux artifact times a fixed-batch job."""

    name = "pollux-progress"

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        if not placement.gpu_types:
            return 0.0
        app, batch = str(spec.model).casefold(), int(spec.batch_size or 0)
        per_node: dict[int, int] = defaultdict(int)
        for node in placement.nodes:
            per_node[node] += 1
        seconds = _seconds(app, batch, tuple(sorted(per_node.values())))
        if not np.isfinite(seconds) or seconds <= 0:
            return 0.0
        return progress_seconds(app, batch, spec.num_gpus) / seconds

    def reference_rate(self, spec: JobSpec) -> float:
        return 1.0

    def step_rate(self, spec: JobSpec, placement: Placement) -> float:
        """Steps per second on ``placement`` at the job's fixed batch: the speed the
        artifact's Optimus predicts with (``pollux_work.step_seconds``; Optimus
        ``speed=step-time``). 0 above the artifact's replica cap for its Optimus
        (``replica_cap``)."""
        if not placement.gpu_types or len(placement.nodes) > replica_cap(
                str(spec.model).casefold(), int(spec.batch_size or 0)):
            return 0.0
        app, batch = str(spec.model).casefold(), int(spec.batch_size or 0)
        per_node: dict[int, int] = defaultdict(int)
        for node in placement.nodes:
            per_node[node] += 1
        seconds = _step(app, batch, tuple(sorted(per_node.values())))
        if not np.isfinite(seconds) or seconds <= 0:
            return 0.0
        return 1.0 / seconds

    def remaining_steps(self, spec: JobSpec, remaining_work: float) -> float:
        """The steps the artifact's Optimus counts as left (``pollux_work.remaining_steps``)
        for a job with ``remaining_work`` of its ``spec.work`` left."""
        app, batch = str(spec.model).casefold(), int(spec.batch_size or 0)
        total = epoch_ends(app, batch, spec.num_gpus)[-1]
        done = total * (1.0 - remaining_work / spec.work) if spec.work > 0 else total
        return remaining_steps(app, batch, spec.num_gpus, done)


@functools.lru_cache(maxsize=65536)
def _seconds(app: str, batch: int, shape: tuple[int, ...]) -> float:
    try:
        return placement_seconds(app, batch, shape, step_sync)
    except (ValueError, ZeroDivisionError):
        return float("inf")


@functools.cache
def replica_cap(app: str, batch: int) -> int:
    """The most replicas the artifact's Optimus gives a job (``simulator.py``,
    ``get_optimus_job_info``): its batch over the smallest measured per-GPU batch; ncf 1."""
    if app == "ncf":
        return 1
    smallest = min(float(row["local_bsz"]) for row in _rows(app, "placements.csv"))
    return max(int(batch // smallest), 1)


@functools.lru_cache(maxsize=65536)
def _step(app: str, batch: int, shape: tuple[int, ...]) -> float:
    try:
        return step_seconds(app, batch, shape, step_sync)
    except (ValueError, ZeroDivisionError):
        return float("inf")


class PolluxEpochThroughputs(PolluxProgressThroughputs):
    """``pollux-epochs``: ``pollux-progress`` timed epoch by epoch on the job's own placement.

    The artifact's ``Job.step`` rounds the time of every epoch a job crosses to whole seconds
    on the placement it runs on (``delta = round(...)``); ``pollux-progress`` rounds them once,
    on the reference placement, and scales the whole job by one rate, so an epoch of 6.45 s on
    8 GPUs (6 s in the artifact) and of 9.78 s on 4 (10 s) both take the job's mean ratio
    (cifar10 at batch 2048: 9.2 s on 4 GPUs). Here the rate depends on progress and is set
    again every round (``scheduling/rerating.py``): the reference seconds the job gets through
    in the next ``horizon`` seconds (the artifact's 60 s interval), each epoch taking its
    rounded seconds on this placement, over those seconds (to its end if it finishes first);
    after a restart only the rest of the round counts (``rate_after_pause``). A placement's
    measured row is looked up in the artifact's order (``artifact_shape``), not ascending."""

    name = "pollux-epochs"
    progress_dependent = True

    def __init__(self, horizon: float = 60.0) -> None:
        self.horizon = horizon

    def rate(self, spec: JobSpec, placement: Placement, progress: float | None = None) -> float:
        if progress is None:
            return super().rate(spec, placement)
        return self.rate_after_pause(spec, placement, progress, 0.0)

    def rate_after_pause(self, spec: JobSpec, placement: Placement, progress: float,
                         paused: float) -> float:
        """The rate over what is left of the round after ``paused`` seconds of restart (the
        artifact's 30 s rescale: a resized job's round has 30 productive seconds)."""
        if not placement.gpu_types:
            return super().rate(spec, placement)
        app, batch = str(spec.model).casefold(), int(spec.batch_size or 0)
        per_node: dict[int, int] = defaultdict(int)
        for node in placement.nodes:
            per_node[node] += 1
        seconds = _epoch_seconds(app, batch, artifact_shape(tuple(per_node.values())))
        if seconds is None:
            return super().rate(spec, placement)
        return window_rate(epoch_ends(app, batch, spec.num_gpus), seconds, progress,
                           max(self.horizon - paused, 1.0))


def window_rate(ends: tuple[float, ...], seconds: tuple[float, ...], progress: float,
                horizon: float) -> float:
    """Reference seconds per second over the next ``horizon`` seconds (or to the end) from
    ``progress`` (a fraction of ``ends[-1]``) when epoch ``e``, ending at ``ends[e]``
    reference seconds, takes ``seconds[e]`` (a part of it the same part of them)."""
    position = progress * ends[-1]
    epoch = int(np.searchsorted(ends, position + 1e-9, side="right"))
    elapsed = gained = 0.0
    while epoch < len(ends):
        length = ends[epoch] - (ends[epoch - 1] if epoch else 0.0)
        left = ends[epoch] - position
        took = max(seconds[epoch], 1e-3) * left / length if length > 0 else 0.0
        if elapsed + took >= horizon:
            return (gained + left * (horizon - elapsed) / took) / horizon
        elapsed, gained, position, epoch = elapsed + took, gained + left, ends[epoch], epoch + 1
    return gained / elapsed if elapsed > 0 else float("inf")


def artifact_shape(per_node: tuple[int, ...]) -> tuple[int, ...]:
    """GPUs per node in the order the artifact looks its placement up: its most-free
    placement takes the nodes largest share first, and ``get_throughput`` turns that list to
    its smallest rotation (4, 4, 2, 1 -> 1, 4, 4, 2: the measured row ``1442``, not ``1244``)."""
    largest_first = tuple(sorted(per_node, reverse=True))
    return min(largest_first[i:] + largest_first[:i] for i in range(len(largest_first)))


def _ordered_step_sync(app: str, shape: tuple[int, ...], micro: float) -> tuple[float, float]:
    return step_sync(app, shape, micro, ordered=True)


@functools.lru_cache(maxsize=65536)
def _epoch_seconds(app: str, batch: int, shape: tuple[int, ...]) -> tuple[float, ...] | None:
    """Each epoch's rounded seconds on ``shape``; None where the model has no time for it."""
    try:
        seconds = placement_epoch_seconds(app, batch, shape, _ordered_step_sync)
    except (ValueError, ZeroDivisionError):
        return None
    return tuple(seconds) if all(np.isfinite(seconds)) else None


register_throughput_model("pollux-progress", PolluxProgressThroughputs)
register_throughput_model("pollux-epochs", PolluxEpochThroughputs)
