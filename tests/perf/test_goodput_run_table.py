"""Runs tabulated along training progress, and the progress-dependent ``goodput`` rate."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.perf.goodput import GoodputThroughputs, goodput_function, seconds_to_progress
from dlsched.perf.goodput import throughput_model as model_module
from dlsched.perf.goodput.goodput import pollux_accumulation
from dlsched.perf.goodput.run_table import RunTable, cumulative_seconds
from dlsched.perf.model import Placement
from dlsched.workload.job import JobSpec

APPS = [("imagenet", 1600), ("cifar10", 128), ("bert", 12), ("yolov3", 8),
        ("deepspeech2", 20), ("ncf", 256)]


def packed(workers: int, per_node: int = 4) -> Placement:
    return Placement(("T4",) * workers, tuple(i // per_node for i in range(workers)))


def spec(app: str, batch: int, gpus: int, work: float = 1000.0) -> JobSpec:
    return JobSpec("j", 0.0, gpus, work, model=app, batch_size=batch)


# Goodput 1 then 1 then 2 at progress 0, 10, 20: 10 s for the first segment, then
# ∫ dP / (1 + (P − 10)/10) over 10 examples = 10·ln 2.
@pytest.mark.parametrize(
    ("goodput", "seconds"),
    [
        ([1.0, 1.0, 2.0], [0.0, 10.0, 10.0 + 10 * math.log(2)]),
        ([2.0, 2.0, 2.0], [0.0, 5.0, 10.0]),
        ([1.0, 0.0, 1.0], [0.0, math.inf, math.inf]),  # cannot train past P = 0
        ([1.0, -math.inf, 1.0], [0.0, math.inf, math.inf]),  # no configuration fits
    ],
    ids=["linear-rise", "constant", "zero", "no-config"],
)
def test_cumulative_seconds_by_hand(goodput: list[float], seconds: list[float]) -> None:
    got = cumulative_seconds(np.array([0.0, 10.0, 20.0]), np.array(goodput))
    assert got == pytest.approx(seconds)


def test_progress_at_fraction_inverts_the_seconds() -> None:
    table = RunTable.of(np.array([0.0, 10.0, 20.0]), np.array([1.0, 1.0, 2.0]))
    assert table.progress_at_fraction(10.0 / table.total_seconds) == pytest.approx(10.0)
    assert table.progress_at_fraction(0.0) == 0.0
    assert table.progress_at_fraction(1.0) == pytest.approx(20.0)
    assert table.goodput_at(15.0) == pytest.approx(1.5)


@pytest.mark.parametrize(("app", "batch"), APPS, ids=[a for a, _ in APPS])
def test_tabulated_run_time_matches_the_exact_closed_form(app: str, batch: int) -> None:
    fn = goodput_function(app)
    atomic, accum = pollux_accumulation(batch, 4, fn.limits.max_local_bsz)
    exact = seconds_to_progress(fn.stats, fn.config(1, 4, atomic, accum, 0.0), 0.0,
                                fn.stats.total_progress)
    table = GoodputThroughputs(adaptive_batch=False).reference_run(app, batch, 4)
    assert table.total_seconds == pytest.approx(exact, rel=5e-3)


@pytest.mark.parametrize(("app", "batch"), APPS, ids=[a for a, _ in APPS])
def test_integrating_the_progress_rate_gives_the_mean_rate(app: str, batch: int) -> None:
    """On a fixed placement, ∫ dw / rate(w) over the work equals work / mean rate."""
    model, job, where = GoodputThroughputs(), spec(app, batch, 4), packed(8)
    steps = 2000
    fractions = (np.arange(steps) + 0.5) / steps
    seconds = sum(job.work / steps / model.rate(job, where, float(f)) for f in fractions)
    assert seconds == pytest.approx(job.work / model.rate(job, where), rel=1e-2)


def test_progress_rate_follows_the_noise_scale() -> None:
    """cifar10 on 8 GPUs, reference batch 128: early in training φ is small and a large batch
    wastes examples, so the 8-GPU job gains little; as φ grows it takes a larger batch and the
    rate rises several-fold. With the submitted batch only, the rate cannot change."""
    adaptive, fixed, job = GoodputThroughputs(), GoodputThroughputs(False), spec("cifar10", 128, 8)
    rates = [adaptive.rate(job, packed(8), f) for f in (0.0, 0.1, 0.5, 0.9)]
    assert rates == sorted(rates) and rates[-1] > 5 * rates[0]
    assert adaptive.progress_dependent and not fixed.progress_dependent
    constant = {round(fixed.rate(job, packed(8), f), 9) for f in (0.0, 0.3, 0.7, 1.0)}
    assert constant == {1.0}  # the reference placement at the reference batch


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(APPS), st.integers(1, 16), st.floats(0.0, 1.0))
def test_adapting_never_loses_to_the_submitted_batch(app_batch: tuple[str, int], gpus: int,
                                                     progress: float) -> None:
    app, batch = app_batch
    job = spec(app, batch, gpus)
    fixed = GoodputThroughputs(False).rate(job, packed(gpus), progress)
    assert GoodputThroughputs().rate(job, packed(gpus), progress) >= fixed * (1 - 1e-9)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([a for a, _ in APPS]), st.lists(st.floats(0.0, 1.0), min_size=1,
                                                        max_size=5))
def test_efficiency_along_matches_pointwise(app: str, fractions: list[float]) -> None:
    stats = goodput_function(app).stats
    points = [f * stats.total_progress for f in fractions]
    batches = np.array([stats.init_batch, 2 * stats.init_batch, 7 * stats.init_batch])
    expected = np.stack([stats.efficiency(p, batches) for p in points])
    assert stats.efficiency_along(points, batches) == pytest.approx(expected)


def test_first_rating_of_every_size_is_cheap() -> None:
    """The old model took ~0.45 s per new placement (13–31 s for a first Optimus round)."""
    for cached in (model_module.goodput_along, model_module.run_table):
        cached.cache_clear()
    model_module._candidates.cache_clear()
    model, job = GoodputThroughputs(), spec("imagenet", 1600, 4)
    started = time.thread_time()  # this thread's CPU: the machine is shared
    rates = [model.rate(job, packed(n)) for n in range(1, 65)]
    assert time.thread_time() - started < 3.0  # ~0.2 s (the old model: 13-31 s)
    assert rates[3] >= 1.0 and rates[15] > 3 * rates[0]  # adapting beats the reference


def test_sia_parameters_make_types_differ() -> None:
    """``params`` override a type's fit: a type twice as fast in every term trains faster."""
    base = goodput_function("cifar10").params
    fast = type(base).from_array(base.as_array() * np.array([.5, .5, .5, .5, .5, .5, 1]))
    model = GoodputThroughputs(params={("cifar10", "A100"): fast})
    job = spec("cifar10", 128, 4)
    a100 = Placement(("A100",) * 4, (0,) * 4)
    assert model.rate(job, a100) > 1.5 * model.rate(job, packed(4))
    mixed = Placement(("A100", "A100", "T4", "T4"), (0, 0, 0, 0))
    assert model.rate(job, mixed) == pytest.approx(model.rate(job, packed(4)))
