"""A JSON trace with no jobs in its list is told as such on line 1: it said 'no job rows (the
file has at most a header)' on line 2, the words for a CSV file, of a one-line JSON file."""

from __future__ import annotations

import pytest
from reader_checks import Writer, expect_error


@pytest.mark.parametrize(("fmt", "text"), [
    ("philly-log", "[]"),
    ("kubernetes-json", "[]"),
    ("kubernetes-json", '{"apiVersion": "v1", "kind": "List", "items": []}'),
], ids=["philly-log", "kubernetes-array", "kubernetes-list"])
def test_an_empty_json_list_is_told_on_line_1(write: Writer, fmt: str, text: str) -> None:
    error = expect_error(write("jobs.json", text), fmt, 1, None)
    assert "no jobs (the file's JSON list is empty): nothing to simulate" in str(error)
    assert "header" not in str(error)


def test_a_csv_of_only_a_header_is_still_told_so(write: Writer) -> None:
    error = expect_error(write("itp.csv", "job_id,submission_time,duration,num_gpu\n"), None, 2,
                         None)
    assert "no job rows (the file has at most a header): nothing to simulate" in str(error)
