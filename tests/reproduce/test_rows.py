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
