"""The ``mig`` trace format in ``dlsched simulate``: a MIG job list's ``inf`` duration (which
``dlsched mig`` takes) is refused saying why, at its file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.errors import InputError
from dlsched.workload.readers import read_trace


def test_an_endless_job_says_it_is_for_dlsched_mig(tmp_path: Path) -> None:
    """It said only "not a finite number: 'inf'", though docs/mig.md allows inf."""
    path = tmp_path / "mig.csv"
    path.write_text("job_id,submit_time,duration,mig_profile\na,0,100,1g.5gb\nb,5,inf,3g\n")
    with pytest.raises(InputError, match=r"mig\.csv:3:duration: 'inf' is for `dlsched mig` "
                                         r"alone"):
        read_trace(path, "mig")
    path.write_text("job_id,submit_time,duration,mig_profile\na,0,100,1g.5gb\n")
    assert [j.work for j in read_trace(path, "mig").jobs] == [100.0]
