"""sia-sosp23 and elasticflow-asplos23 run on small subsets and write the contract columns
(their full tables are far from the papers' numbers: docs/reproduce.md says how far and why,
so no band is checked here)."""

from __future__ import annotations

import csv
import shutil
import warnings
from pathlib import Path

import pytest

from dlsched.data_location import DataWarning, set_data_dir
from dlsched.reproduce.output import write_csv
from dlsched.reproduce.published import published
from dlsched.reproduce.registry import ExperimentOptions, get_experiment
from dlsched.reproduce.rows import COLUMNS
from dlsched.reproduce.runner import run_experiment
from dlsched.workload.bundled import BUNDLED_TRACES


def _written(rows: list, path: Path) -> list[dict[str, str]]:
    write_csv(rows, path)
    with path.open() as handle:
        reader = csv.DictReader(handle)
        assert tuple(reader.fieldnames or ()) == COLUMNS
        return list(reader)


def test_elasticflow_experiment_on_40_jobs(tmp_path: Path) -> None:
    options = ExperimentOptions(("testbed-195",), (), options={
        "policies": "elasticflow,edf", "limit": "40"})
    rows = run_experiment(get_experiment("elasticflow-asplos23"), options)
    cells = {(r.policy, r.metric): r for r in rows}
    references = published()
    for policy in ("elasticflow", "edf"):
        ratio = cells[(policy, "deadline_ratio")]
        assert ratio.dlsched is not None and 0.0 <= ratio.dlsched <= 1.0
        # A 40-job subset is not compared with the 195-job figure; the figure is there.
        assert ratio.reference is None and ratio.source == "not compared: a subset (limit=40)"
        key = ("elasticflow-asplos23", "testbed-195", policy, "deadline_ratio")
        assert "plot_fig6.py" in references[key].source
    gain = references[("elasticflow-asplos23", "testbed-195", "elasticflow/edf",
                       "deadline_ratio_gain")]
    assert gain.value == pytest.approx(0.6667 / 0.0872, rel=1e-4)
    assert cells[("elasticflow/edf", "deadline_ratio_gain")].reference is None
    written = _written(rows, tmp_path / "reproduce.csv")
    assert {row["experiment"] for row in written} == {"elasticflow-asplos23"}


def test_sia_experiment_on_one_small_workload(tmp_path: Path) -> None:
    """A Pollux-format workload in Sia's folder layout (Sia's own files are not bundled), on
    the bundled T4 fits (no data directory: the goodput-sia model warns and falls back)."""
    folder = tmp_path / "philly"
    folder.mkdir()
    shutil.copy(BUNDLED_TRACES["pollux-1"].file(), folder / "workload-1.csv")
    options = ExperimentOptions(("philly",), (), options={
        "policies": "sia,gavel-maxmin", "workloads": "1", "limit": "3",
        "data": str(tmp_path)})
    set_data_dir(tmp_path)  # no profiles/sia there: fast, bundled fits
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            rows = run_experiment(get_experiment("sia-sosp23"), options)
    finally:
        set_data_dir(None)
    cells = {(r.case, r.policy, r.metric): r for r in rows}
    mean = cells[("philly", "sia", "jct_mean_s")]
    assert mean.dlsched == cells[("philly/workload-1", "sia", "jct_mean_s")].dlsched
    # Three jobs of one workload: not compared with Table 3 (which is there).
    assert mean.reference is None and mean.source == "not compared: a subset (limit=3)"
    assert "Table 3" in published()[("sia-sosp23", "philly", "sia", "jct_mean_s")].source
    ratio = cells[("philly", "sia/gavel-maxmin", "jct_mean_ratio")]
    assert ratio.dlsched == pytest.approx(
        mean.dlsched / cells[("philly", "gavel-maxmin", "jct_mean_s")].dlsched)
    reference = published()[("sia-sosp23", "philly", "sia/gavel-maxmin", "jct_mean_ratio")]
    assert reference.value == pytest.approx(0.6 / 1.9, rel=1e-4)
    written = _written(rows, tmp_path / "reproduce.csv")
    assert len(written) == len(rows)


def test_sia_experiment_names_a_missing_workload(tmp_path: Path) -> None:
    options = ExperimentOptions(("philly",), (), options={"workloads": "3",
                                                          "data": str(tmp_path)})
    with pytest.raises(Exception, match="workload-3.csv"):
        run_experiment(get_experiment("sia-sosp23"), options)
