"""The sweep's plots (sweeps/table.py ``plot``): what each bar and its interval say."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dlsched.sweeps import table as sweep_table


def test_bars_name_the_varied_option_and_stop_at_zero(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # Two seeds far apart: the 95% interval (t = 12.7) reaches below 0 for a JCT, which
    # cannot be negative; the bar's lower end stops at 0, the upper end is the interval's.
    rows = [{"trace": "t", "cluster": "c", "policy": "fifo", "seed": seed,
             "restart_overhead": 60, "key": f"k{seed}", "jct_mean": jct}
            for seed, jct in ((0, 100.0), (1, 300.0))]
    drawn: list[tuple[list[str], list[list[float]]]] = []

    def bar(self, names, heights, yerr=None, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append((list(names), [list(side) for side in yerr]))

    import matplotlib.axes

    monkeypatch.setattr(matplotlib.axes.Axes, "bar", bar)
    sweep_table.plot(pd.DataFrame(rows), tmp_path, metrics=("jct_mean",))
    (names, (low, high)), = drawn
    assert names == ["fifo restart_overhead=60"]
    ci = sweep_table.confidence(pd.DataFrame(rows), ("jct_mean",)).iloc[0]
    assert ci["jct_mean_ci_low"] < 0  # the interval itself, as ci.csv keeps it
    assert low == [200.0] and high == pytest.approx([ci["jct_mean_ci_high"] - 200.0])


def test_an_option_of_another_policy_makes_no_second_bar(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Varying ``tiresias:thresholds`` ran fifo once (one key) but drew it twice, labelled with
    thresholds it does not have; a utilization bar's interval stops at 1."""
    rows = [{"trace": "t", "cluster": "c", "policy": policy, "seed": seed,
             "tiresias:thresholds": thresholds, "key": f"{policy}{thresholds}{seed}",
             "utilization": 0.9 + 0.09 * seed}
            for policy in ("fifo", "tiresias") for thresholds in ("600", "3600")
            for seed in (0, 1)]
    drawn: list[tuple[list[str], list[float]]] = []

    def bar(self, names, heights, yerr=None, **kwargs):  # type: ignore[no-untyped-def]
        drawn.append((list(names), list(yerr[1])))

    import matplotlib.axes

    monkeypatch.setattr(matplotlib.axes.Axes, "bar", bar)
    sweep_table.plot(pd.DataFrame(rows), tmp_path, metrics=("utilization",))
    (names, high), = drawn
    # the policy named once: the label read 'tiresias tiresias:thresholds=600'
    assert names == ["fifo", "tiresias thresholds=600", "tiresias thresholds=3600"]
    assert all(0.945 + up <= 1.0 + 1e-12 for up in high)  # mean 0.945; t-interval ~ +0.57


def test_plotting_leaves_the_pyplot_backend_alone(tmp_path: Path) -> None:
    """plot() called matplotlib.use("Agg"): a notebook's inline backend was switched off by
    ``dlsched.sweep(..., out=...)`` and later figures were no longer shown."""
    import matplotlib

    before = matplotlib.get_backend()
    matplotlib.use("svg")
    try:
        rows = [{"trace": "t", "cluster": "c", "policy": "fifo", "seed": 0, "key": "k",
                 "jct_mean": 100.0}]
        paths = sweep_table.plot(pd.DataFrame(rows), tmp_path, metrics=("jct_mean",))
        assert matplotlib.get_backend() == "svg"
        assert paths[0].read_bytes().startswith(b"\x89PNG")
    finally:
        matplotlib.use(before)
