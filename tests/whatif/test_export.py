"""``dlsched history export``: a service database's finished jobs written as a trace, and read
back by the ``dlsched-history`` reader (the what-if round trip)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("sqlalchemy")

from dlsched.cli import app  # noqa: E402
from dlsched.runtime.store import Batch, JobRow, Store  # noqa: E402
from dlsched.whatif.export import run_time  # noqa: E402
from dlsched.workload.readers import read_trace  # noqa: E402

# (id, GPUs, GPU type, queue, submitted, status, attempts as (start, end), finished)
JOBS = [("a", 2, "T4", "team-a", 10.0, "finished", [(12.0, 40.0)], 40.0),
        ("b", 1, None, "team-b", 11.0, "finished", [(13.0, 20.0), (50.0, 70.0)], 70.0),
        ("c", 4, None, "team-a", 12.0, "pending", [], None),
        ("d", 1, None, "team-b", 13.0, "failed", [(41.0, 45.0)], 45.0)]


def database(path: Path) -> tuple[str, float]:
    url = f"sqlite:///{path}"
    store = Store(url)
    store.create()
    epoch = store.epoch()
    for seq, (job_id, gpus, kind, queue, submitted, status, spans, done) in enumerate(JOBS, 1):
        store.add_job(JobRow(id=job_id, seq=seq, name=None, command=["sleep", "1"], env={},
                             working_dir=None, num_gpus=gpus, gpu_type=kind, queue=queue,
                             priority=0, min_gpus=None, max_gpus=None, checkpoint_dir="/c",
                             work_seconds=None, status="pending", submit_time=submitted),
                      submitted, "submitted")
        batch = Batch()
        for number, (start, end) in enumerate(spans, 1):
            batch.attempt_started(job_id, number, start, range(gpus), (), "/log")
            batch.attempt_ended(job_id, number, end, "succeeded", "")
        batch.job(job_id, status=status, finish_time=done, attempts=len(spans),
                  preemptions=max(len(spans) - 1, 0))
        store.commit(batch)
    store.close()
    return url, epoch


def test_export_then_read_round_trip(tmp_path: Path) -> None:
    url, epoch = database(tmp_path / "dlsched.db")
    out = tmp_path / "history.csv"
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 jobs" in result.output and "mean JCT 44.5 s" in result.output
    # in the units of a replay's line ("makespan 60.0 s" beside the replay's "1.0 min")
    assert "mean queueing delay 2.0 s, makespan 1.0 min, 1 preemption" in " ".join(
        result.output.split()), result.output
    rows = list(csv.DictReader(out.open()))
    assert float(rows[0]["submit_time"]) == pytest.approx(epoch + 10.0, abs=1e-3)
    assert (rows[1]["preemptions"], rows[1]["attempts"], rows[1]["measured_jct"]) == (
        "1", "2", "59.000")
    trace = read_trace(out)
    assert trace.format == "dlsched-history"
    assert [(j.job_id, j.submit_time, j.num_gpus, j.work, j.queue, j.gpu_types)
            for j in trace.jobs] == [("a", 0.0, 2, 28.0, "team-a", ("T4",)),
                                     ("b", pytest.approx(1.0), 1, 27.0, "team-b", ())]


def test_the_jobs_left_out_are_counted(tmp_path: Path) -> None:
    """The export said "2 jobs -> ..." and nothing of the failed job (held a GPU 4 s) nor of
    the one still pending: a what-if then silently replays less than the service ran."""
    url, _ = database(tmp_path / "dlsched.db")
    out = tmp_path / "history.csv"
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out),
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert "left out: 1 failed, 1 not ended (--status failed/cancelled exports those)" in (
        " ".join(result.output.split()))
    assert '"left_out": {' in result.output and '"not ended": 1' in result.output
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out),
                                      "--status", "finished", "--status", "failed"])
    assert "left out: 1 not ended" in result.output and "--status" not in result.output


def test_failed_jobs_and_last_attempt_durations_on_request(tmp_path: Path) -> None:
    url, _ = database(tmp_path / "dlsched.db")
    out = tmp_path / "history.csv"
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out),
                                      "--status", "finished", "--status", "failed",
                                      "--duration", "last"])
    assert result.exit_code == 0, result.output
    assert [(j.job_id, j.work) for j in read_trace(out).jobs] == [
        ("a", 28.0), ("b", 20.0), ("d", 4.0)]


@pytest.mark.parametrize("status", ["finshed", "running"])
def test_a_state_no_job_ends_in_is_named(tmp_path: Path, status: str) -> None:
    """A typo exported nothing and said "no finished jobs to export": the history's fault."""
    url, _ = database(tmp_path / "dlsched.db")
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out",
                                      str(tmp_path / "h.csv"), "--status", status])
    assert result.exit_code == 1
    assert f"--status: {status!r} is not one of finished, failed, cancelled" in result.output
    # a typo names the closest state, as ``jobs --status`` does; a running job is no typo
    assert ("did you mean 'finished'?" in result.output) is (status == "finshed")


def test_no_database_is_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["history", "export", "--data-dir", str(tmp_path),
                                      "--out", str(tmp_path / "h.csv")])
    assert result.exit_code == 1 and "no database at" in result.output


def test_an_out_file_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    """It was a FileNotFoundError traceback."""
    url, _epoch = database(tmp_path / "dlsched.db")
    (tmp_path / "plain").write_text("")
    out = tmp_path / "plain" / "h.csv"
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out)])
    assert result.exit_code == 1 and not isinstance(result.exception, OSError)
    assert " ".join(result.output.split()).startswith(f"error: {out}: cannot write"), \
        result.output


@pytest.mark.parametrize(("how", "seconds"), [("total", 27.0), ("last", 20.0)])
def test_run_time(how: str, seconds: float) -> None:
    assert run_time([(13.0, 20.0), (50.0, 70.0), (80.0, None)], how) == seconds


def test_without_the_runtime_extra_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    result = CliRunner().invoke(app, ["history", "export", "--data-dir", str(tmp_path),
                                      "--out", str(tmp_path / "h.csv")])
    assert result.exit_code == 2
    assert [line for line in result.output.splitlines() if line.strip()] == [
        "error: dlsched history export needs the runtime extra (no module named "
        "'sqlalchemy'): pip install 'dlsched[runtime]'"]


def test_a_time_window_selects_by_submission(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    url, epoch = database(tmp_path / "dlsched.db")
    out = tmp_path / "history.csv"
    since = datetime.fromtimestamp(epoch + 10.5, UTC).isoformat()
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out),
                                      "--since", since])
    assert result.exit_code == 0, result.output
    assert [j.job_id for j in read_trace(out).jobs] == ["b"]
    bad = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out),
                                   "--until", "last tuesday"])
    assert bad.exit_code == 1 and "--until: not an ISO date" in bad.output


@pytest.mark.parametrize(("since", "until"), [("2026-12-08", "2026-12-01"),
                                               ("2026-12-01", "2026-12-01")],
                         ids=["reversed", "empty"])
def test_a_window_that_holds_no_time_is_refused(tmp_path: Path, since: str, until: str) -> None:
    """``--since`` after ``--until`` said "no finished jobs to export (nothing has finished
    yet, or the filters left none)", blaming the history for the window's typo."""
    url, _ = database(tmp_path / "dlsched.db")
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out",
                                      str(tmp_path / "h.csv"), "--since", since,
                                      "--until", until])
    assert result.exit_code == 1
    assert f"error: --since {since} is not before --until {until}" in result.output


def test_what_a_worker_asked_beyond_a_whole_gpu_is_replayed(tmp_path: Path) -> None:
    # Two half-GPU jobs and a MIG job ran side by side on the service; the export used to drop
    # the sharing fields, so the replay ran each on a whole GPU (and queued them).
    from builders import make_cluster, records_of, simulator

    jobs = _exported(tmp_path, 1, {
        "h1": {"gpu_share": 0.5, "gpu_memory_gb": 8.0, "cpus_per_gpu": 2.0},
        "h2": {"gpu_share": 0.5, "memory_gb_per_gpu": 4.0},
        "m": {"gpu_share": 3 / 7, "mig_profile": "3g.20gb"}})
    assert [(j.gpu_share, j.gpu_memory_gb, j.mig_profile, j.cpus_per_gpu, j.memory_gb_per_gpu)
            for j in jobs] == [(0.5, 8.0, None, 2.0, 0.0), (0.5, 0.0, None, 0.0, 4.0),
                               (pytest.approx(3 / 7), 0.0, "3g.20gb", 0.0, 0.0)]
    cluster = make_cluster(nodes=1, gpus=2, gpu_type="A100")
    replay = records_of(simulator("fifo", cluster, jobs))
    assert {r.finish_time for r in replay.values()} == {100.0}  # side by side, as measured


@pytest.mark.parametrize(("cells", "where"), [
    ("1.5,,", "gpu_share: must be in (0, 1], got 1.5"),
    (",,5g", "mig_profile: unknown MIG profile '5g'"),
    ("0,,", "gpu_share: must be > 0"),
])
def test_bad_sharing_cells_name_the_field(tmp_path: Path, cells: str, where: str) -> None:
    _refused(tmp_path, "gpu_share,gpu_memory_gb,mig_profile", f"a,0,1,10,q,{cells}", where)


def test_an_elastic_jobs_bounds_are_exported_and_replayed(tmp_path: Path) -> None:
    # An elastic job (2..8 GPUs around 4) was exported as a rigid 4-GPU job: a what-if of an
    # elastic policy could never resize it.
    exported = _exported(tmp_path, 4, {"e": {"min_gpus": 2, "max_gpus": 8}, "r": {}})
    jobs = {j.job_id: j for j in exported}
    assert (jobs["e"].min_gpus, jobs["e"].max_gpus, jobs["e"].is_elastic) == (2, 8, True)
    assert (jobs["r"].min_gpus, jobs["r"].max_gpus, jobs["r"].is_elastic) == (None, None, False)


def test_a_jobs_anti_affinity_is_exported_and_replayed(tmp_path: Path) -> None:
    exported = _exported(tmp_path, 2, {"s": {"max_per_node": 1, "density_group": "svc"},
                                       "p": {}})
    jobs = {j.job_id: j for j in exported}
    assert (jobs["s"].max_per_node, jobs["s"].group) == (1, "svc")
    assert (jobs["p"].max_per_node, jobs["p"].group) == (0, None)


def test_a_negative_cap_in_a_history_names_the_field(tmp_path: Path) -> None:
    _refused(tmp_path, "max_per_node,group", "a,0,4,10,q,-1,svc", "max_per_node: must be >= 0")


@pytest.mark.parametrize(("cells", "where"), [
    ("5,", "min_gpus: 5 is more than num_gpus 4"),
    (",3", "max_gpus: 3 is less than num_gpus 4"),
    ("0,", "min_gpus: must be >= 1"),
])
def test_bad_elastic_bounds_name_the_field(tmp_path: Path, cells: str, where: str) -> None:
    _refused(tmp_path, "min_gpus,max_gpus", f"a,0,4,10,q,{cells}", where)


def _refused(tmp_path: Path, columns: str, row: str, where: str) -> None:
    """A history with the required columns, then ``columns``, and one ``row``: reading it
    fails at line 2 with ``where`` (a field and its message)."""
    from dlsched.errors import InputError

    path = tmp_path / "history.csv"
    path.write_text(f"job_id,submit_time,num_gpus,duration,queue,{columns}\n{row}\n")
    with pytest.raises(InputError, match=r"history\.csv:2:" + re.escape(where)):
        read_trace(path)


def _exported(tmp_path: Path, gpus: int, jobs: dict[str, dict]) -> tuple:
    """The jobs read back from ``history export`` of a service database where each of
    ``jobs`` (id -> JobRow fields beyond the defaults) ran once on ``gpus`` GPUs, 0-100 s."""
    url = f"sqlite:///{tmp_path / 'dlsched.db'}"
    store = Store(url)
    store.create()
    for seq, (job_id, fields) in enumerate(jobs.items(), 1):
        row = {"min_gpus": None, "max_gpus": None, **fields}
        store.add_job(JobRow(id=job_id, seq=seq, name=None, command=["sleep", "1"], env={},
                             working_dir=None, num_gpus=gpus, gpu_type=None, queue="q",
                             priority=0, checkpoint_dir="/c", work_seconds=None,
                             status="pending", submit_time=0.0, **row), 0.0, "submitted")
        batch = Batch()
        batch.attempt_started(job_id, 1, 0.0, range(gpus), (), "/log")
        batch.attempt_ended(job_id, 1, 100.0, "succeeded", "")
        batch.job(job_id, status="finished", finish_time=100.0, attempts=1, preemptions=0)
        store.commit(batch)
    store.close()
    out = tmp_path / "history.csv"
    result = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return read_trace(out).jobs


def test_counts_read_as_english(tmp_path: Path) -> None:
    """The export said "1 jobs -> ..." and "1 preemptions"."""
    url, _ = database(tmp_path / "dlsched.db")
    out = tmp_path / "history.csv"
    said = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out)]).output
    assert "2 jobs ->" in said and "1 preemption" in " ".join(said.split())
    assert "1 preemptions" not in " ".join(said.split())
    said = CliRunner().invoke(app, ["history", "export", "--db", url, "--out", str(out),
                                    "--queue", "team-a"]).output
    assert said.startswith("1 job ->") and "0 preemptions" in " ".join(said.split()), said
