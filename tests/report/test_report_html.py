"""The HTML report: content, escaping, highlighting and determinism."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from report_builders import hand_result, job, run_tiny

from dlsched.report.html import render_report, summary_table, write_report


def test_report_names_every_policy_and_has_plots(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "report.html"
    write_report([run_tiny("fifo"), run_tiny("sjf"), run_tiny("tiresias")], path, "tiny")
    page = path.read_text(encoding="utf-8")
    for policy in ("fifo", "sjf", "tiresias"):
        assert f"<td>{policy}</td>" in page
    assert page.count("<svg") == 3
    assert "trace <b>tiny</b>" in page and "cluster <b>two-nodes</b>" in page
    assert "seed <b>0</b>" in page and "dlsched <b>0.1.0</b>" in page
    assert "How to read" in page


def test_title_is_escaped() -> None:
    page = render_report([run_tiny("fifo")], "<script>x</script>")
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_best_value_per_column_highlighted() -> None:
    table = summary_table([run_tiny("fifo"), run_tiny("sjf")]).split("<h3>")[1]  # completion
    rows = {re.search(r"<td>(\w+)</td>", row).group(1): row  # type: ignore[union-attr]
            for row in table.splitlines() if row.startswith("<tr><td>")}
    cells = {name: re.findall(r"<td( class=\"best\")?>([^<]*)</td>", row)[1:]
             for name, row in rows.items()}
    # Column 1 is mean JCT: sjf 116 s beats fifo 117.25 s; column 7 is makespan: fifo 150 < 155.
    assert cells["sjf"][1][0] and not cells["fifo"][1][0]
    assert cells["fifo"][7][0] and not cells["sjf"][7][0]
    assert cells["fifo"][0][0] and cells["sjf"][0][0]  # both finished 4 jobs: a tie


def test_single_run_highlights_nothing() -> None:
    assert 'class="best"' not in summary_table([run_tiny("fifo")])


def test_page_is_deterministic_apart_from_wall_seconds() -> None:
    results = [run_tiny("fifo")]
    assert render_report(results, "t") == render_report(results, "t")


def test_empty_report_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        render_report([], "nothing")


def _headers(table: str) -> list[list[str]]:
    return [re.findall(r"<th>([^<]*)</th>", part) for part in table.split("<h3>")[1:]]


def test_the_summary_is_two_tables_that_fit_a_screen() -> None:
    """18 columns in one table ran 4 columns off a 1,280 px screen (issue 11 item 12); each
    table now has at most 10 and scrolls inside its box if a screen is narrower still."""
    table = summary_table([run_tiny("fifo"), run_tiny("sjf")])
    headers = _headers(table)
    assert [h[0] for h in headers] == ["policy", "policy"] and len(headers) == 2
    assert all(len(h) <= 10 for h in headers)
    assert "mean JCT" in headers[0] and "wall seconds" in headers[1]
    assert table.count('<div class="table">') == 2


def test_no_jain_index_for_one_tenant_and_no_column_nobody_measured() -> None:
    one = hand_result([job("a", 0, 0, 10), job("b", 0, 0, 20)])
    two = hand_result([job("a", 0, 0, 10, queue="x"), job("b", 0, 0, 20, queue="y")])
    assert "Jain&#x27;s index" not in summary_table([one])
    assert "Jain&#x27;s index" in summary_table([two])
    assert "deadlines met (%)" not in summary_table([one])  # no job had a deadline


def test_the_header_shows_the_settings() -> None:
    page = render_report([run_tiny("fifo")], "t", settings={
        "throughput model": "linear", "options": "limit=10; restart_overhead=5.0"})
    assert "throughput model <b>linear</b>" in page
    assert "options <b>limit=10; restart_overhead=5.0</b>" in page


def test_the_page_prints_cleanly() -> None:
    page = render_report([run_tiny("fifo")], "t")
    assert "@media print" in page and "page-break-inside: avoid" in page


def test_a_run_with_node_failures_shows_them() -> None:
    """compare --failures wrote node failures, ETTR and the GPU-hours they cost to
    summary.json, and the report showed none of them (seen in Chromium)."""
    from dataclasses import replace

    plain = hand_result([job("a", 0, 0, 3600), job("b", 0, 0, 7200)])
    hit = replace(job("b", 0, 0, 7200), failures=1, lost_gpu_seconds=1800.0,
                  checkpoint_gpu_seconds=360.0, restart_gpu_seconds=30.0,
                  useful_seconds=5400.0)
    kept = replace(job("a", 0, 0, 3600), useful_seconds=3600.0)
    failed = replace(hand_result([kept, hit]),
                     failures_by_category=(("gpu", 2), ("network", 1)))
    assert "Failures and checkpoints" not in summary_table([plain])
    table = summary_table([failed]).split("<h3>")[-1]
    assert table.startswith("Failures and checkpoints")
    assert _headers("<h3>" + table)[0] == [
        "policy", "node failures", "jobs interrupted", "ETTR (%)", "lost GPU-hours",
        "checkpoint GPU-hours", "restart GPU-hours"]
    cells = re.findall(r"<td>([^<]*)</td>", table)
    # ETTR: kept work (3600 + 5400 s) over time since first start (3600 + 7200 s), 1 GPU each.
    assert cells == ["hand", "3", "1", "83.33", "0.5", "0.1", "0.00833"]


def test_sub_headings_are_smaller_than_headings() -> None:
    """'Completion' (h3, the browser's 1.17em = 16.4 px) looked bigger than 'Summary' (h2,
    15 px)."""
    page = render_report([run_tiny("fifo")], "t")
    size = re.search(r"main\.report h3 \{ font-size: ([\d.]+)px", page)
    assert size is not None and float(size.group(1)) < 15
