"""How the HTML report writes numbers (report/numbers.py)."""

from __future__ import annotations

import pytest

from dlsched.report.html import JAIN
from dlsched.report.numbers import display


@pytest.mark.parametrize(("value", "shown"), [
    (5.0694, "5.07"), (1.0, "1.00"), (0.8119, "0.812"), (0.0272, "0.0272"), (0.0, "0"),
    # three significant digits rounded these up to "1", as if the index were exactly 1
    (0.99987, "1.00"), (0.9996, "1.00"), (0.9994, "0.999"),
], ids=["hours", "one", "below-one", "small", "zero", "jain-0.99987", "rounds-to-1",
        "stays-below-1"])
def test_display(value: float, shown: str) -> None:
    assert display(value) == shown


def test_jain_index_close_to_one_reads_as_its_neighbours() -> None:
    """Two tenants with 440 and 430 GPU-seconds: Jain's index 0.99987 was written '1', a
    run with exactly 1 '1.00'."""
    assert JAIN.format(0.9998678996036988) == JAIN.format(1.0) == "1.00"
