"""Runs that finished different numbers of jobs: their JCT columns are over different jobs, so
the summary highlights no best JCT, total wait or makespan and says why (session 29: pack-aware
finished 98 of 100 and its mean JCT over those 98 was highlighted against fifo's over 100)."""

from __future__ import annotations

import re

from report_builders import hand_result, job

from dlsched.report.html import summary_table

ALL_FINISH = hand_result([job("a", 0, 0, 100), job("b", 0, 0, 300)])
ONE_STALLS = hand_result([job("a", 0, 0, 100), job("b", 0, 0, None)])


def highlighted(table: str) -> list[str]:
    """Headers of the completion table's columns with a highlighted cell."""
    completion = table.split("<h3>")[1]
    headers = re.findall(r"<th>([^<]*)</th>", completion)[1:]
    marked: set[int] = set()
    for row in completion.splitlines():
        if row.startswith("<tr><td>"):
            cells = re.findall(r"<td( class=\"best\")?>[^<]*</td>", row)[1:]
            marked.update(i for i, mark in enumerate(cells) if mark)
    return [headers[i] for i in sorted(marked)]


def test_uneven_runs_highlight_no_column_over_finished_jobs() -> None:
    table = summary_table([ALL_FINISH, ONE_STALLS])
    marked = highlighted(table)
    assert "jobs finished" in marked
    assert not [h for h in marked if "JCT" in h or "total wait" in h or "makespan" in h]
    assert "finished different numbers of jobs (2, 1)" in table


def test_runs_that_finished_alike_are_still_compared() -> None:
    table = summary_table([ALL_FINISH, ALL_FINISH])
    assert "mean JCT" in highlighted(table)
    assert "different numbers" not in table
