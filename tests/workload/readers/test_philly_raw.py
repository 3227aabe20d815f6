"""Philly's raw job log (``cluster_job_log``, JSON) reader: jobs by hand, scope rules, bad
input located by line and field."""

from __future__ import annotations

import json

import pytest
from reader_checks import Writer, expect_error, skip_counts

from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.philly_raw import NEVER_RAN, NO_GPU, UNFINISHED

FMT = "philly-log"


def _job(jobid: str, submitted: str, attempts: list, status: str = "Pass",
         vc: str = "6214e9") -> dict:
    return {"status": status, "vc": vc, "jobid": jobid, "attempts": attempts,
            "submitted_time": submitted, "user": "u1"}


def _attempt(start: str | None, end: str | None, *machines: int) -> dict:
    return {"start_time": start, "end_time": end,
            "detail": [{"ip": f"m{i}", "gpus": [f"gpu{g}" for g in range(n)]}
                       for i, n in enumerate(machines)]}


JOBS = [
    _job("app_1", "2017-10-03 14:00:00",
         [_attempt("2017-10-03 14:00:30", "2017-10-03 15:00:30", 4, 4)]),
    # retried: 600 s then 1,200 s; the second attempt on 2 GPUs, the first on 1
    _job("app_2", "2017-10-03 14:10:00",
         [_attempt("2017-10-03 14:10:00", "2017-10-03 14:20:00", 1),
          _attempt("2017-10-03 15:00:00", "2017-10-03 15:20:00", 2)], status="Failed",
         vc="b436b2"),
    _job("app_3", "2017-10-03 14:20:00", [], status="Killed"),  # never ran
    _job("app_4", "2017-10-03 14:30:00",
         [_attempt("2017-10-03 14:30:00", None, 1)]),  # running when the log was cut
    _job("app_5", "2017-10-03 14:40:00",
         [_attempt("2017-10-03 14:40:00", "2017-10-03 14:50:00")]),  # no GPU
]


def test_jobs_by_hand(write: Writer) -> None:
    path = write("cluster_job_log", json.dumps(JOBS))  # one line, as released
    assert detect_format(path) == FMT
    trace = read_trace(path)
    jobs = {j.job_id: j for j in trace.jobs}
    assert sorted(jobs) == ["app_1", "app_2"]
    one, two = jobs["app_1"], jobs["app_2"]
    assert (one.submit_time, one.work, one.num_gpus, one.queue, one.pool) == (
        0.0, 3600.0, 8, "6214e9", "6214e9")
    assert (two.submit_time, two.work, two.num_gpus, two.queue) == (600.0, 1800.0, 2, "b436b2")
    notes = "\n".join(trace.warnings)
    assert f"dropped 1 row: {NEVER_RAN}" in notes and f"dropped 1 row: {UNFINISHED}" in notes
    assert f"dropped 1 row: {NO_GPU}" in notes


def test_a_bad_value_names_the_line_of_its_job_and_the_field(write: Writer) -> None:
    bad = [JOBS[0], dict(JOBS[1], attempts=[_attempt("2017-10-03 14:10:00", "later", 1)])]
    path = write("log.json", json.dumps(bad, indent=1))
    line = json.dumps(bad, indent=1).splitlines().index(" {", 2) + 1  # the second job's line
    expect_error(path, FMT, line, "[1].attempts[0].end_time")
    skip_counts(path, FMT, 1)


@pytest.mark.parametrize("change, field", [
    pytest.param({"status": "Done"}, "[1].status", id="unknown-status"),
    pytest.param({"vc": ""}, "[1].vc", id="no-vc"),
    pytest.param({"submitted_time": None}, "[1].submitted_time", id="no-submission"),
    pytest.param({"attempts": {"a": 1}}, "[1].attempts", id="attempts-not-a-list"),
    pytest.param({"attempts": [_attempt("2017-10-03 15:00:00", "2017-10-03 14:00:00", 1)]},
                 "[1].attempts[0].end_time", id="ends-before-it-starts"),
    pytest.param({"jobid": "app_1"}, "[1].jobid", id="repeated-id"),
])
def test_bad_job(write: Writer, change: dict, field: str) -> None:
    path = write("log.json", json.dumps([JOBS[0], dict(JOBS[1], **change)]))
    expect_error(path, FMT, 1, field)


def test_more_gpus_than_the_cluster_is_an_error(write: Writer) -> None:
    path = write("log.json", json.dumps([JOBS[1], JOBS[0]]))
    expect_error(path, FMT, 1, "[1].attempts", ReaderOptions(max_gpus=4))


def test_not_an_array_and_broken_json(write: Writer) -> None:
    expect_error(write("a.json", "[" + json.dumps(JOBS[0]) + ', {"jobid": '), FMT, 1, "[1]")
    with pytest.raises(Exception, match="expected a JSON array"):
        read_trace(write("b.json", '{"attempts": 1, "submitted_time": 2}'), FMT)


def test_a_kubernetes_list_is_still_read_as_kubernetes(write: Writer) -> None:
    path = write("jobs.json", json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    assert detect_format(path) == "kubernetes-json"


def test_the_released_one_line_log_over_a_megabyte_is_detected_and_read(
        write: Writer) -> None:
    # The real cluster_job_log is one line of ~100 MB: detection may not stop at the first
    # line's length limit (it said "line longer than 1,048,576 characters").
    jobs = [dict(JOBS[0], jobid=f"app_{i}") for i in range(5000)]
    text = json.dumps(jobs)
    assert len(text) > 1_048_576 and "\n" not in text
    path = write("cluster_job_log", text)
    assert detect_format(path) == FMT
    assert len(read_trace(path)) == 5000
