"""A Pollux job's work as the Pollux artifact defines it (``--work-definition progress``).

The artifact's simulator (petuum/adaptdl, branch osdi21-artifact, ``simulator/simulator.py``,
``Job.step``) runs a job until its training *progress* reaches the application's target: the
end of its last epoch (``max_epochs``, the rows of its ``validation-*.csv``), in steps at the
initial batch ``M0``. A step at global batch ``M`` makes ``gain`` steps of progress,
``gain = (var + sqr) / (var / (M / M0) + sqr)`` with the gradient statistics of the epoch it
is in (interpolated linearly between the measured batch sizes), and takes the measured step
time plus the compute part of it again for each accumulation micro-step. Each epoch's time is
rounded to whole seconds, as the artifact does.

Work, as in the ``pollux`` reader, is in reference seconds: the seconds this takes on
``num_replicas`` T4 GPUs packed four per node, at the workload's ``batch_size`` (the artifact's
``target_batch_size`` for its Tiresias and Optimus baselines). dlsched's default
(``steps``: the measured steps to finish at that batch times the step time) differs by up to
30% per job (ncf on 1 GPU: the artifact forces one accumulation micro-step there); see
docs/reproduce.md.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from dlsched.perf.goodput.bundle import load_epoch_iterations, load_grad_stats
from dlsched.perf.goodput.efficiency import GradientStats
from dlsched.workload.readers.pollux_profile import PolluxProfile, load_profile

StepSync = Callable[[str, tuple[int, ...], float], tuple[float, float]]


@functools.lru_cache(maxsize=4096)
def progress_seconds(application: str, batch_size: int, replicas: int) -> float:
    """Seconds to the artifact's progress target on ``replicas`` packed T4 at ``batch_size``."""
    return placement_seconds(application, batch_size, _packed(replicas), _packed_step_sync)


def _packed(replicas: int) -> tuple[int, ...]:
    full, rest = divmod(replicas, 4)
    return (4,) * full + ((rest,) if rest else ())


def _packed_step_sync(application: str, shape: tuple[int, ...],
                      micro: float) -> tuple[float, float]:
    curve = load_profile().curves[(application, sum(shape))]
    return (float(np.interp(micro, curve.local_bsz, curve.step_time)),
            float(np.interp(micro, curve.local_bsz, curve.sync_time)))


def placement_seconds(application: str, batch_size: int, shape: tuple[int, ...],
                      step_sync: StepSync) -> float:
    """Seconds to the progress target on ``shape`` (GPUs per node) with ``step_sync`` giving
    the step and all-reduce seconds of one micro-step at a per-GPU batch."""
    return float(sum(placement_epoch_seconds(application, batch_size, shape, step_sync)))


def placement_epoch_seconds(application: str, batch_size: int, shape: tuple[int, ...],
                            step_sync: StepSync) -> list[float]:
    """Each epoch's seconds on ``shape`` (GPUs per node), rounded to whole seconds as the
    artifact's ``Job.step`` rounds every epoch it crosses (``delta = round(...)``)."""
    profile = load_profile()
    stats = load_grad_stats()[application]
    replicas = sum(shape)
    micro, accum = _micro_batch(profile, stats, application, batch_size, replicas)
    step, sync = step_sync(application, shape, micro)
    seconds_per_step = step + (step - sync) * accum
    batch = replicas * micro * (accum + 1)
    return _epoch_seconds(stats, batch, seconds_per_step)


def _epoch_seconds(stats: GradientStats, batch: int, seconds_per_step: float) -> list[float]:
    """Each epoch's seconds, rounded as the artifact rounds them."""
    ends = (0.0, *stats.progress)
    out = []
    for epoch in range(len(stats.progress)):
        sqr, var = _grad_stats(stats, batch, epoch)
        gain = (var + sqr) / (var / (batch / stats.init_batch) + sqr)
        steps = (ends[epoch + 1] - ends[epoch]) / stats.init_batch
        out.append(float(round(steps / (gain / seconds_per_step))))
    return out


@functools.lru_cache(maxsize=4096)
def epoch_ends(application: str, batch_size: int, replicas: int) -> tuple[float, ...]:
    """Reference seconds (``progress_seconds``' unit) at the end of each epoch."""
    profile = load_profile()
    stats = load_grad_stats()[application]
    micro, accum = _micro_batch(profile, stats, application, batch_size, replicas)
    step, sync = _packed_step_sync(application, _packed(replicas), micro)
    batch = replicas * micro * (accum + 1)
    return tuple(np.cumsum(_epoch_seconds(stats, batch, step + (step - sync) * accum)))


def remaining_steps(application: str, batch_size: int, replicas: int, done: float) -> float:
    """Steps left as the artifact's Optimus counts them (``simulator/optimus.py``,
    ``job.remaining``): the steps at ``batch_size`` from the end of the epoch the job is in
    (after ``done`` reference seconds) to the end of the last, 1 in the last epoch; steps by
    the end of an epoch interpolated linearly between the measured batch sizes
    (``get_iteration``, ``perf/goodput/bundle.load_epoch_iterations``)."""
    ends = epoch_ends(application, batch_size, replicas)
    epoch = int(np.searchsorted(ends, done + 1e-6, side="right"))
    last = len(ends) - 1
    if epoch >= last:
        return 1.0
    return _iteration(application, batch_size, last) - _iteration(application, batch_size, epoch)


def _iteration(application: str, batch_size: int, epoch: int) -> float:
    by_batch = load_epoch_iterations()[application]
    sizes = sorted(by_batch)
    return float(np.interp(batch_size, sizes, [by_batch[b][epoch] for b in sizes]))


def step_seconds(application: str, batch_size: int, shape: tuple[int, ...],
                 step_sync: StepSync) -> float:
    """Seconds of one step at ``batch_size`` on ``shape`` (GPUs per node) as the artifact's
    Optimus predicts it (``simulator/optimus.py``, ``predict_step_time``): the batch split as
    in ``Job.update_local_bsz``, one accumulation micro-step forced on a single GPU, the
    step time plus its compute part again per accumulation micro-step."""
    profile = load_profile()
    stats = load_grad_stats()[application]
    replicas = sum(shape)
    local = math.ceil(batch_size / replicas - 1e-8)
    accum = math.ceil(local / profile.max_local_bsz[application] - 1e-8) - 1
    if replicas == 1:
        accum = max(1, accum)
    micro = math.ceil(local / (accum + 1) - 1e-8)
    micro = min(micro, int(max(stats.batch_sizes) / (replicas * (accum + 1))))
    step, sync = step_sync(application, shape, micro)
    return step + (step - sync) * accum


def micro_batch(application: str, batch_size: int, replicas: int) -> tuple[int, int]:
    """Per-GPU micro-batch and accumulation steps of a fixed batch (``Job.update_local_bsz``)."""
    return _micro_batch(load_profile(), load_grad_stats()[application], application, batch_size,
                        replicas)


def _micro_batch(profile: PolluxProfile, stats: GradientStats, application: str,
                 batch_size: int, replicas: int) -> tuple[int, int]:
    """The artifact's ``Job.update_local_bsz`` at a fixed batch: per-GPU micro-batch and
    accumulation steps; one GPU above ``M0`` always accumulates at least once."""
    max_local = profile.max_local_bsz[application]
    local = math.ceil(batch_size / replicas - 1e-8)
    accum = math.ceil(local / max_local - 1e-8) - 1
    if replicas == 1 and batch_size > stats.init_batch:
        accum = max(1, accum)
    micro = math.ceil(local / (accum + 1) - 1e-8)
    return min(micro, int(max(stats.batch_sizes) / (replicas * (accum + 1)))), accum


def _grad_stats(stats: GradientStats, batch: float, epoch: int) -> tuple[float, float]:
    sqr = float(np.interp(batch, stats.batch_sizes, [row[epoch] for row in stats.sqr]))
    var = float(np.interp(batch, stats.batch_sizes, [row[epoch] for row in stats.var]))
    return sqr, var
