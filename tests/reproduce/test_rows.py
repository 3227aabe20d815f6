"""ReproduceRow: rel_diff = dlsched / reference - 1, and the CSV cells in contract order."""

from __future__ import annotations

import pytest

from dlsched.reproduce.rows import COLUMNS, ReproduceRow


def test_columns_are_the_contract() -> None:
    assert ",".join(COLUMNS) == "experiment,case,policy,metric,dlsched,reference,rel_diff,source"


@pytest.mark.parametrize(("dlsched", "reference", "expected"), [
    pytest.param(110.0, 100.0, 0.1, id="above"),
    pytest.param(95.0, 100.0, -0.05, id="below"),
    pytest.param(95.0, None, None, id="no-reference"),
    pytest.param(None, 100.0, None, id="not-measured"),
    pytest.param(5.0, 0.0, None, id="zero-reference"),
])
def test_rel_diff(dlsched: float | None, reference: float | None,
                  expected: float | None) -> None:
    diff = ReproduceRow("e", "c", "p", "m", dlsched, reference).rel_diff
    assert diff == pytest.approx(expected) if expected is not None else diff is None


def test_cells_leave_absent_values_empty() -> None:
    row = ReproduceRow("pollux-osdi21", "workload-6@1.0", "tiresias", "jct_mean_s", 3500.0,
                       None)
    assert row.cells() == ("pollux-osdi21", "workload-6@1.0", "tiresias", "jct_mean_s", "3500",
                           "", "", "")


# Tiresias' fifo cell: dlsched 26,945.7575 s against the artifact's 26,945.8 s. At six
# significant digits both cells read 26945.8, and rel_diff -1.57724e-06 could not be checked
# against them (26945.8 / 26945.8 - 1 = 0).
@pytest.mark.parametrize(("dlsched", "reference"), [
    pytest.param(26945.7575, 26945.8, id="tiresias-fifo"),
    pytest.param(136.93921875, 137.0, id="megatron-tflops"),
    pytest.param(0.40370712, 0.43, id="llama3-mfu"),
    pytest.param(1e-9 / 3, 2.5e-10, id="tiny"),
])
def test_rel_diff_reads_back_from_the_csv_cells(dlsched: float, reference: float) -> None:
    cells = ReproduceRow("e", "c", "p", "m", dlsched, reference).cells()
    value, ref, diff = (float(cell) for cell in cells[4:7])
    assert (value, ref) == (dlsched, reference)
    assert diff == value / ref - 1


def test_html_cells_keep_six_digits() -> None:
    cells = ReproduceRow("e", "c", "p", "m", 26945.7575, 26945.8).cells(exact=False)
    assert cells[4:7] == ("26945.8", "26945.8", "-1.57724e-06")
