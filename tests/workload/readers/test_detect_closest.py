"""A trace whose columns match no format: the error names the closest one and what it lacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.errors import InputError
from dlsched.workload.readers import read_trace


@pytest.mark.parametrize(("header", "said"), [
    ("job_id,submit_time,num_gpus,duration",
     "; closest: dlsched-history, which also needs queue (docs/traces.md)"),
    ("id,submit,gpus,runtime", "columns were ['gpus', 'id', 'runtime', 'submit']"),
], ids=["lacks-queue", "nothing-close"])
def test_an_unknown_header_names_the_closest_format(tmp_path: Path, header: str,
                                                    said: str) -> None:
    """The simplest job CSV (no queue column) was told only "unknown trace format (known: 17
    formats)", not that one column short of dlsched-history."""
    path = tmp_path / "jobs.csv"
    path.write_text(f"{header}\n1,0,2,100\n")
    with pytest.raises(InputError) as err:
        read_trace(path)
    assert str(err.value).endswith(said), err.value
