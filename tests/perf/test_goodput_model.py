"""Goodput model pieces checked by hand: iteration time, fit, statistical efficiency."""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dlsched.errors import InputError
from dlsched.perf.goodput import PerfParams, efficiency, fit_error, fit_perf_params, iteration_time
from dlsched.perf.goodput.bundle import load_grad_stats, load_perf_params
from dlsched.perf.goodput.iteration_time import sync_time
from dlsched.perf.goodput.measurements import StepMeasurements, pollux_measurements, read_steps

HAND = PerfParams(alpha_c=0.1, beta_c=0.01, alpha_r=0.05, beta_r=0.01, alpha_n=0.3, beta_n=0.02,
                  gamma=1.0)
APPS = ("bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3")


def pollux_dir(app: str) -> Path:
    return Path(str(resources.files("dlsched.data").joinpath("profiles", "pollux", app)))


@pytest.mark.parametrize(
    ("params", "nodes", "replicas", "atomic", "accum", "seconds"),
    [
        (HAND, 1, 1, 10, 0, 0.2),  # compute only: 0.1 + 0.01·10
        (HAND, 1, 4, 10, 0, 0.2 + 0.07),  # γ = 1: no overlap; sync 0.05 + 0.01·(4 − 2)
        (HAND, 2, 4, 10, 0, 0.2 + 0.34),  # across nodes: 0.3 + 0.02·2
        (HAND, 1, 2, 10, 0, 0.2 + 0.05),  # a ring of 2: no retrogression
        (HAND, 1, 4, 10, 2, 0.27 + 2 * 0.2),  # two accumulation steps skip the sync
        (PerfParams(0.1, 0.01, 0.05, 0.01, 0.3, 0.02, 2.0), 1, 4, 10, 0, math.hypot(0.2, 0.07)),
    ],
    ids=["one-gpu", "one-node", "two-nodes", "ring-of-2", "accumulation", "gamma-2"],
)
def test_iteration_time_by_hand(params, nodes, replicas, atomic, accum, seconds):
    assert float(iteration_time(params, nodes, replicas, atomic, accum)) == pytest.approx(seconds)


@pytest.mark.parametrize("app", APPS)
def test_fitted_step_time_grows_with_batch_and_across_nodes(app):
    params = load_perf_params()[(app, "T4")].params
    step = iteration_time(params, 1, 4, np.array([8, 16, 32, 64]))
    assert np.all(np.diff(step) > 0)
    assert sync_time(params, 2, 4) > sync_time(params, 1, 4) > sync_time(params, 1, 1) == 0
    assert iteration_time(params, 2, 4, 16) > iteration_time(params, 1, 4, 16)


@pytest.mark.parametrize(
    ("app", "placement", "local_bsz", "measured", "tolerance"),
    [
        ("cifar10", "1", 64, 0.05983335971832275, 0.05),  # fitted 0.0622: 3.9 % off
        ("cifar10", "44", 64, 0.17055258750915528, 0.15),  # fitted 0.150: 12 % off
        ("bert", "1", 8, 0.7032617032527924, 0.10),  # fitted 0.640: 9 % off
        ("bert", "4", 12, 0.9571182131767273, 0.03),  # fitted 0.935: 2.3 % off
        ("bert", "2222", 8, 1.5383124649524689, 0.05),  # fitted 1.599: 4 % off
    ],
)
def test_fitted_params_reproduce_measured_rows(app, placement, local_bsz, measured, tolerance):
    fitted = load_perf_params()[(app, "T4")]
    nodes, replicas = len(placement), sum(map(int, placement))
    predicted = float(iteration_time(fitted.params, nodes, replicas, local_bsz))
    error = abs(predicted - measured) / measured
    assert error < tolerance
    assert error <= fitted.error.max


@pytest.mark.parametrize("app", ["bert", "yolov3"])  # the two smallest profiles, for speed
def test_bundled_fit_is_reproducible_and_its_error_is_what_it_reports(app):
    data = pollux_measurements(pollux_dir(app))
    bundled = load_perf_params()[(app, "T4")]
    assert fit_error(bundled.params, data).mean == pytest.approx(bundled.error.mean, abs=1e-5)
    refit = fit_perf_params(data)
    assert fit_error(refit, data).mean == pytest.approx(bundled.error.mean, rel=1e-3)
    assert bundled.error.mean < 0.10


def test_fit_recovers_the_parameters_that_made_the_data():
    truth = PerfParams(0.02, 0.003, 0.04, 0.002, 0.2, 0.01, 1.5)
    nodes, replicas, atomic = (np.array(v) for v in np.meshgrid([1, 2, 4], [1, 2, 4, 8], [8, 32]))
    keep = (replicas >= nodes).ravel()
    nodes, replicas, atomic = nodes.ravel()[keep], replicas.ravel()[keep], atomic.ravel()[keep]
    step = iteration_time(truth, nodes, replicas, atomic)
    grad = truth.alpha_c + truth.beta_c * atomic
    data = StepMeasurements(nodes, replicas, atomic.astype(float), step, step - grad)
    assert fit_error(fit_perf_params(data), data).max < 0.01


def test_bad_row_names_file_line_and_field(tmp_path):
    path = tmp_path / "placements.csv"
    path.write_text("placement,local_bsz,step_time,sync_time\n1,32,0.1,0.01\n2,32,fast,0.01\n")
    with pytest.raises(InputError, match=r"placements\.csv:3:step_time"):
        read_steps(path)


@pytest.mark.parametrize(
    ("phi", "m0", "batch", "expected"),
    [(100.0, 10, 10, 1.0), (100.0, 10, 100, 0.55), (0.0, 10, 40, 0.25), (math.inf, 10, 40, 1.0)],
    ids=["at-M0", "phi-100", "no-noise", "no-signal"],
)
def test_efficiency_by_hand(phi, m0, batch, expected):
    assert float(efficiency(phi, m0, batch)) == pytest.approx(expected)


@given(st.floats(0.0, 1e6), st.integers(1, 1000), st.integers(1, 10_000), st.integers(1, 10_000))
def test_efficiency_is_one_at_m0_and_falls_with_the_batch(phi, m0, small, extra):
    assert float(efficiency(phi, m0, m0)) == pytest.approx(1.0)
    assert efficiency(phi, m0, m0 + small) >= efficiency(phi, m0, m0 + small + extra)


@pytest.mark.parametrize("app", APPS)
def test_measured_efficiency_is_one_at_m0_and_falls_with_the_batch(app):
    stats = load_grad_stats()[app]
    batches = np.array(stats.batch_sizes, dtype=float)
    for progress in (0.0, stats.total_progress / 3, stats.total_progress):
        curve = stats.efficiency(progress, batches)
        assert curve[0] == pytest.approx(1.0)
        assert np.all(np.diff(curve) <= 1e-12) and curve[-1] < 1.0


def test_noise_scale_grows_over_cifar10_training():
    stats = load_grad_stats()["cifar10"]
    start, end = (float(stats.noise_scales(p, 128)) for p in (0.0, stats.total_progress))
    # validation-128.csv: 128·5.0666/8.9473 = 72.5 after epoch 0, 128·0.26569/0.00087973 at the end
    assert start == pytest.approx(128 * 5.066594 / 8.947308, rel=1e-5)
    assert end == pytest.approx(128 * 0.2656906 / 0.0008797252, rel=1e-5)
