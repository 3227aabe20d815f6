"""Several traces as one (``resolve_traces``): each file a tenant queue, e.g. ITP's clusters."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.errors import InputError
from dlsched.workload.bundled import resolve_traces


def _itp(tmp_path: Path, name: str, rows: list[str]) -> str:
    path = tmp_path / f"{name}.csv"
    path.write_text("job_id,submission_time,duration,num_gpu\n" + "\n".join(rows) + "\n")
    return str(path)


def test_each_file_becomes_a_queue_with_prefixed_ids(tmp_path: Path) -> None:
    a = _itp(tmp_path, "cluster01", ["j1,100,60,1", "j2,160,60,2"])
    b = _itp(tmp_path, "cluster02", ["j1,50,30,4"])
    trace = resolve_traces(f"{a}, {b}")
    assert trace.name == "cluster01+cluster02"
    assert [(j.job_id, j.queue, j.submit_time) for j in trace.jobs] == [
        ("cluster01/j1", "cluster01", 0.0), ("cluster02/j1", "cluster02", 0.0),
        ("cluster01/j2", "cluster01", 60.0)]  # each file rebased to its own first job
    assert resolve_traces(a).jobs[0].job_id == "j1"  # one file: unchanged


def test_a_job_that_names_its_queue_keeps_it() -> None:
    trace = resolve_traces("philly-sample,chronus-mix2-4h")
    queues = {j.queue for j in trace.jobs if j.job_id.startswith("philly-sample/")}
    assert "philly-sample" not in queues and len(queues) > 5  # Philly's VCs


@pytest.mark.parametrize(("names", "message"), [
    ("pollux-1,philly-sample", "different throughput models"),
    ("pollux-1,pollux-1", "named alike"),
])
def test_traces_that_cannot_merge_are_refused(names: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        resolve_traces(names)
