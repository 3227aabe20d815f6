"""The gavel reader's clean rows (``gavel._CleanRows``): a row whose checks all pass is built
without a ``RowContext``; it must give the very job ``_physical_job`` gives, and every other
row must still go through ``_physical_job`` (same job, same located error)."""

from __future__ import annotations

from pathlib import Path

import pytest
from reader_checks import Writer, expect_error

from dlsched.workload.readers import ReaderOptions, gavel, read_trace

T = "\t"
NAMES = ["job_type", "command", "working_directory", "num_steps_arg", "needs_data_dir",
         "total_steps", "scale_factor", "priority_weight", "SLO", "arrival_time"]
GOOD = dict(zip(NAMES, ["ResNet-18 (batch size 128)", "python3 main.py", "cifar10",
                        "--num_steps", "1", "1000", "2", "1", "-1.000000", "0"], strict=True))


def _row(**changes: str) -> str:
    return T.join((GOOD | changes)[name] for name in NAMES)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each line ``_physical_job`` is asked to build (the rows the clean path left)."""
    asked: list[int] = []
    generic = gavel._physical_job

    def counted(ctx: gavel.RowContext) -> gavel.JobSpec:
        asked.append(ctx.line)
        return generic(ctx)

    monkeypatch.setattr(gavel, "_physical_job", counted)
    return asked


ODD_BUT_VALID = [
    pytest.param(_row(), id="plain"),
    pytest.param(_row(job_type=" A3C ", command=" python3 a.py"), id="spaces-around-text"),
    pytest.param(_row(arrival_time=" 12.5 ", total_steps="1e3", scale_factor="4.0"),
                 id="numbers-as-floats"),
    pytest.param(_row(arrival_time="-0", needs_data_dir="0", SLO="0"), id="negative-zero"),
    pytest.param(_row(priority_weight="3", SLO="-1e15"), id="weight-and-slo-bounds"),
    pytest.param(_row(job_type="CycleGAN", total_steps="1_000"), id="underscore-digits"),
]


@pytest.mark.parametrize("row", ODD_BUT_VALID)
def test_clean_rows_give_the_generic_job(write: Writer, monkeypatch: pytest.MonkeyPatch,
                                         row: str) -> None:
    path = write("x.trace", f"{_row()}\n{row}\n")
    fast = read_trace(path, "gavel").jobs[1]
    monkeypatch.setattr(gavel._CleanRows, "job", lambda self, values, line: None)
    generic = read_trace(path, "gavel").jobs[1]
    assert fast == generic
    assert [type(getattr(fast, name)) for name in fast.__slots__] == [
        type(getattr(generic, name)) for name in generic.__slots__]


BAD_ROWS = [  # (row, field): each must reach ``_physical_job``'s located error
    pytest.param(_row(arrival_time="nan"), "arrival_time", id="nan"),
    pytest.param(_row(total_steps="inf"), "total_steps", id="inf"),
    pytest.param(_row(total_steps="1e16"), "total_steps", id="beyond-magnitude"),
    pytest.param(_row(SLO="-1e16"), "SLO", id="slo-beyond-magnitude"),
    pytest.param(_row(command="  "), "command", id="blank-command"),
    pytest.param(_row(working_directory=""), "working_directory", id="empty-directory"),
    pytest.param(_row(job_type="BERT (batch size 8)"), "job_type", id="unmeasured-type"),
    pytest.param(_row(total_steps="10.5"), "total_steps", id="fractional-steps"),
    pytest.param(_row(priority_weight="0"), "priority_weight", id="zero-weight"),
    pytest.param(_row(needs_data_dir="0.5"), "needs_data_dir", id="fractional-flag"),
    pytest.param(_row(command="python3\x01main.py"), "command", id="control-character"),
]


@pytest.mark.parametrize("row, field", BAD_ROWS)
def test_rows_the_clean_path_refuses_keep_their_error(write: Writer, row: str,
                                                      field: str) -> None:
    expect_error(write("x.trace", f"{_row()}\n{row}\n"), "gavel", 2, field)


def test_only_unclean_rows_reach_the_generic_builder(write: Writer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _counting(monkeypatch)
    rows = [_row(), _row(scale_factor="16"), _row(arrival_time="5"), _row(SLO="2")]
    path = write("x.trace", "\n".join(rows) + "\n")
    trace = read_trace(path, "gavel", ReaderOptions(max_gpus=8, skip_invalid=True))
    assert [job.job_id for job in trace.jobs] == ["x-0", "x-2"]
    assert trace.skipped == 2 and asked == [2, 4]


def test_bundled_trace_builds_no_row_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """The 1,000 rows of ``gavel-continuous-1000`` are all clean (the trace read was ~200 k
    instructions a row through ``RowContext``; ~65 k now)."""
    from dlsched.workload.bundled import resolve_trace

    asked = _counting(monkeypatch)
    trace = resolve_trace("gavel-continuous-1000", None, ReaderOptions(max_gpus=108))
    assert len(trace) == 1000 and asked == []


def test_clean_path_reads_the_shared_physical_traces(shared_data: Path) -> None:
    folder = shared_data / "traces/gavel/physical_cluster"
    for path in sorted(folder.glob("*.trace")):
        fast = read_trace(path, "gavel")
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(gavel._CleanRows, "job", lambda self, values, line: None)
            assert read_trace(path, "gavel").jobs == fast.jobs, path.name
