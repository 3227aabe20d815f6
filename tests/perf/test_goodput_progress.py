"""Goodput, its best batch, progress at goodput and the ``goodput`` throughput model."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dlsched.perf.goodput import (
    BatchConfig,
    BatchLimits,
    GoodputThroughputs,
    GradientStats,
    advance,
    goodput_function,
    seconds_to_progress,
)
from dlsched.perf.goodput.iteration_time import throughput
from dlsched.perf.model import Placement, get_throughput_model
from dlsched.workload.job import JobSpec

# M0 = 10; epochs end at 100 and 200 examples; sqr = 1; var 1 then 3 (so φ = 10·var).
STATS = GradientStats(10, (10,), (100.0, 200.0), ((1.0, 1.0),), ((1.0, 3.0),))
# 30 examples/s at M = 20; E = (φ + 10)/(φ + 20) = 20/30 while var = 1 (P ≤ 100).
CONFIG = BatchConfig(atomic_bsz=20, accum_steps=0, batch=20, throughput=30.0,
                     efficiency=2 / 3)
# ∫ dP/E over the second epoch: 1/E = 1 + 10/(10·var + 10), var = 1 + (P − 100)/50
SECOND_EPOCH = 100 + 50 * math.log(2)


@pytest.mark.parametrize(
    ("start", "seconds", "progress", "used", "finished"),
    [
        (0.0, 2.0, 40.0, 2.0, False),  # goodput 30·2/3 = 20 examples/s
        (0.0, 5.0, 100.0, 5.0, False),  # exactly the first epoch
        (0.0, 5.0 + SECOND_EPOCH / 30, 200.0, 5.0 + SECOND_EPOCH / 30, True),
        (0.0, 100.0, 200.0, 5.0 + SECOND_EPOCH / 30, True),  # stops at the total
        (200.0, 10.0, 200.0, 0.0, True),
    ],
    ids=["within-epoch", "one-epoch", "to-the-end", "capped", "already-done"],
)
def test_advance_matches_hand_computation(start, seconds, progress, used, finished):
    result = advance(STATS, CONFIG, start, seconds)
    assert result.progress == pytest.approx(progress)
    assert result.seconds == pytest.approx(used)
    assert result.finished is finished


def test_seconds_to_progress_by_hand_and_inverse_of_advance():
    assert seconds_to_progress(STATS, CONFIG, 0.0, 200.0) == pytest.approx(
        (150 + SECOND_EPOCH) / 30)
    stats = goodput_function("cifar10").stats
    config = goodput_function("cifar10").optimize(1, 4, 0.0)
    half = advance(stats, config, 1000.0, 600.0)
    assert seconds_to_progress(stats, config, 1000.0, half.progress) == pytest.approx(600.0)


def test_closed_form_matches_numerical_integration():
    from scipy.integrate import quad

    fn = goodput_function("imagenet")
    config = fn.optimize(2, 8, 0.0)
    end = fn.stats.total_progress
    numeric, _ = quad(lambda p: 1 / float(fn.stats.efficiency(p, config.batch)), 0, end,
                      points=fn.stats.progress[:-1], limit=400)
    assert seconds_to_progress(fn.stats, config, 0, end) == pytest.approx(
        numeric / config.throughput, rel=1e-6)


@pytest.mark.parametrize("app", ["bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"])
@pytest.mark.parametrize(("nodes", "replicas"), [(1, 1), (1, 4), (2, 8)])
def test_best_batch_is_inside_the_limits_and_beats_every_candidate(app, nodes, replicas):
    fn = goodput_function(app)
    lim = fn.limits
    progress = fn.stats.total_progress / 2
    best = fn.optimize(nodes, replicas, progress)
    assert lim.min_local_bsz <= best.atomic_bsz <= lim.max_local_bsz
    assert max(lim.init_batch, replicas * lim.min_local_bsz) <= best.batch <= lim.max_batch
    m, s = fn.candidates(replicas)
    batches = replicas * m * (s + 1)
    others = throughput(fn.params, nodes, replicas, m, s) * fn.stats.efficiency(progress, batches)
    assert best.goodput == pytest.approx(others.max())
    assert best.goodput > np.median(others)


def test_best_batch_grows_as_training_goes_on_and_none_when_nothing_fits():
    fn = goodput_function("cifar10")
    early, late = fn.optimize(1, 4, 0.0), fn.optimize(1, 4, 0.9 * fn.stats.total_progress)
    assert late.batch > early.batch
    assert goodput_function("yolov3").optimize(64, 256, 0.0) is None  # 256·4 > 512


def test_pollux_limits_reused_from_the_profile_reader():
    assert BatchLimits.pollux("yolov3") == BatchLimits(8, 512, 4, 8)
    assert BatchLimits.pollux("cifar10") == BatchLimits(128, 4096, 32, 1024)


def spec(app: str, batch: int, gpus: int) -> JobSpec:
    return JobSpec("j", 0.0, gpus, 3600.0, model=app, batch_size=batch)


def packed(workers: int, per_node: int = 4, gpu: str = "T4") -> Placement:
    return Placement((gpu,) * workers, tuple(i // per_node for i in range(workers)))


def test_goodput_model_is_registered_and_runs_at_one_where_requested():
    model = get_throughput_model("goodput")
    assert model.name == "goodput" and get_throughput_model("pollux").name == "pollux"
    fixed = GoodputThroughputs(adaptive_batch=False)
    assert fixed.rate(spec("imagenet", 1600, 8), packed(8)) == pytest.approx(1.0)
    assert model.rate(spec("imagenet", 1600, 8), packed(0)) == 0.0


@pytest.mark.parametrize(("app", "batch", "gpus"), [("bert", 96, 4), ("cifar10", 512, 4)])
def test_adapting_the_batch_never_hurts_and_spreading_over_nodes_does(app, batch, gpus):
    adaptive, fixed = GoodputThroughputs(), GoodputThroughputs(adaptive_batch=False)
    job = spec(app, batch, gpus)
    assert adaptive.rate(job, packed(gpus)) >= fixed.rate(job, packed(gpus))
    assert adaptive.rate(job, packed(16)) > fixed.rate(job, packed(16))
    assert fixed.rate(job, packed(gpus, per_node=1)) < fixed.rate(job, packed(gpus))


def test_goodput_model_needs_a_batch_size():
    with pytest.raises(ValueError, match="batch_size"):
        GoodputThroughputs().rate(JobSpec("j", 0.0, 1, 1.0, model="bert"), packed(1))


def test_run_time_grows_with_fewer_gpus():
    model = GoodputThroughputs()
    rates = [model.rate(spec("imagenet", 1600, 8), packed(n)) for n in (1, 2, 4, 8, 16)]
    assert np.all(np.diff(rates) > 0)
