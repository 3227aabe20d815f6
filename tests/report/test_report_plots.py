"""Plots: timeline resampling and SVG output."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import pytest
from report_builders import hand_result, job, run_tiny

from dlsched.report.metrics import timeline_integral
from dlsched.report.plots import (
    cdf_points,
    downsample_step,
    jct_cdf_svg,
    queue_length_svg,
    utilization_svg,
)
from dlsched.sim.result import SimulationResult

PLOTS: list[tuple[str, Callable[[Sequence[SimulationResult]], str]]] = [
    ("jct-cdf", jct_cdf_svg), ("utilization", utilization_svg), ("queue", queue_length_svg)]


def _long_step(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return np.cumsum(rng.uniform(0.1, 2.0, n)), rng.integers(0, 50, n).astype(float)


def test_short_timeline_is_kept() -> None:
    t, v = downsample_step([0, 1, 2], [3, 4, 5], max_points=10)
    assert t.tolist() == [0, 1, 2] and v.tolist() == [3, 4, 5]


def test_mean_resampling_keeps_the_area() -> None:
    times, values = _long_step(20_000)
    t, v = downsample_step(times, values, max_points=500, how="mean")
    assert len(t) == len(v) <= 500
    start, end = times[0], times[-1]
    assert timeline_integral(t, v, start, end) == pytest.approx(
        timeline_integral(times, values, start, end))


def test_max_resampling_keeps_the_peak() -> None:
    times, values = _long_step(20_000)
    values[12_345] = 1_000.0
    t, v = downsample_step(times, values, max_points=500, how="max")
    assert len(t) <= 500 and v.max() == 1_000.0
    assert v.min() >= values.min()


def test_cdf_points_thinned() -> None:
    x, y = cdf_points(list(range(10_000, 0, -1)), max_points=100)
    assert len(x) <= 100 and x[0] == 1 and x[-1] == 10_000 and y[-1] == 1.0
    assert np.all(np.diff(x) > 0)


@pytest.mark.parametrize("plot", [p[1] for p in PLOTS], ids=[p[0] for p in PLOTS])
def test_plot_is_inline_svg_and_deterministic(
        plot: Callable[[Sequence[SimulationResult]], str]) -> None:
    results = [run_tiny("fifo"), run_tiny("sjf")]
    svg = plot(results)
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "fifo" in svg and "sjf" in svg
    assert plot(results) == svg


@pytest.mark.parametrize("plot", [p[1] for p in PLOTS], ids=[p[0] for p in PLOTS])
def test_plot_without_data(plot: Callable[[Sequence[SimulationResult]], str]) -> None:
    assert "no data" in plot([hand_result([], end_time=0)])


def test_queue_length_ticks_are_whole_jobs() -> None:
    """With no job waiting, the axis ran 0 to 0.05 in steps of 0.01 jobs."""
    svg = queue_length_svg([hand_result([], times=[0.0, 3600.0], used=[0.0, 0.0])])
    y_axis = svg[svg.index('<g id="ytick_1">'):svg.index(">jobs waiting<")]
    ticks = re.findall(r">([^<>]+)</text>", y_axis)
    assert ticks == ["0", "1"]


@pytest.mark.parametrize("plot", [p[1] for p in PLOTS], ids=[p[0] for p in PLOTS])
def test_runs_that_draw_the_same_curve_stay_visible(
        plot: Callable[[Sequence[SimulationResult]], str]) -> None:
    """Three policies that schedule alike drew three solid lines on top of each other: the
    legend named three runs and the page showed the last one only. The second run is dashed."""
    alone = plot([run_tiny("fifo")])
    both = plot([run_tiny("fifo"), run_tiny("fifo")])
    assert "stroke-dasharray" not in alone and "stroke-dasharray" in both


def test_jct_cdf_rises_from_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CDF started in mid-air at 1/n (0.2 with five jobs); it now rises from 0 at the
    shortest JCT and ends at 1."""
    import matplotlib.axes

    drawn: list[tuple[list[float], list[float]]] = []
    real_step = matplotlib.axes.Axes.step

    def step(self, x, y, *args, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append((list(x), list(y)))
        return real_step(self, x, y, *args, **kwargs)

    monkeypatch.setattr(matplotlib.axes.Axes, "step", step)
    jcts = [3600.0, 7200.0, 7200.0, 10800.0, 36000.0]
    records = [job(f"j{i}", 0.0, 0.0, jct) for i, jct in enumerate(jcts)]
    jct_cdf_svg([hand_result(records, times=[0.0, 36000.0], used=[1.0, 0.0])])
    ((x, y),) = drawn
    assert x[:2] == [1.0, 1.0] and y[:2] == [0.0, 0.2]
    assert x[-1] == 10.0 and y[-1] == 1.0
