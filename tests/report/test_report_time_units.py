"""The compare report writes each time in the unit its size reads best in, as the console's
lines do (``wording.duration_text``): a what-if replay of a service's short jobs read "mean
JCT 0.00146 h" in the report where the console said 5.3 s (session 33, helper C). The
numbers in summary.json and the CSVs stay seconds (contracts: not touched here)."""

from __future__ import annotations

import re

from builders import make_cluster, make_job, simulator

from dlsched.report.html import render_report, summary_table


def _short_runs() -> list:
    jobs = [make_job("a").at(0).gpus(2).work(4.2).queue("default").build(),
            make_job("b").at(1).gpus(2).work(6.4).queue("research").build()]
    return [simulator(p, make_cluster(nodes=1, gpus=2), jobs).run() for p in ("fifo", "sjf")]


def _cells(table: str, policy: str) -> list[str]:
    row = next(r for r in table.splitlines() if r.startswith(f"<tr><td>{policy}</td>"))
    return [text for _, text in re.findall(r"<td( class=\"best\")?>([^<]*)</td>", row)[1:]]


def test_seconds_long_jobs_read_in_seconds_not_thousandths_of_an_hour() -> None:
    table = summary_table(_short_runs()).split("<h3>")[1]  # completion
    header = re.findall(r"<th>([^<]*)</th>", table)
    assert "mean JCT" in header and not [h for h in header if "(h)" in h]
    cells = dict(zip(header[1:], _cells(table, "fifo"), strict=True))
    # a: 0 -> 4.2 s; b waits for a: 1 -> 10.6 s, a JCT of 9.6 s; mean 6.9 s
    assert cells["mean JCT"] == "6.9 s" and cells["makespan"] == "10.6 s"
    assert cells["mean total wait"] == "1.6 s"


def test_the_tenant_table_and_the_plots_use_the_same_units() -> None:
    page = render_report(_short_runs(), "short")
    assert "fifo: JCT</th>" in page and "(h)" not in page
    assert "<td>4.2 s</td>" in page  # queue default's JCT
    assert "job completion time (seconds, log scale)" in page and "time (seconds)" in page
    assert "times are hours" not in page


def test_axis_unit_follows_the_longest_value() -> None:
    from dlsched.report.plots import time_axis

    assert time_axis(5.3) == (1.0, "seconds")
    assert time_axis(59.99) == (60.0, "minutes")  # reads "1.0 min", as duration_text
    assert time_axis(3 * 3600) == (3600.0, "hours")
    assert time_axis(30 * 86400) == (86400.0, "days")
    assert time_axis(0.0) == (1.0, "seconds")
