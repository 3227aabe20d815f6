"""reproduce.html's table in headless Chromium (Debian's ``chromium``, driven by Playwright, as
``tests/runtime/test_dashboard_browser.py`` does): names stay on one line and numbers line up
on the right. Seen on gavel-osdi20 continuous-100 at 1,200 px: 'gavel-osdi20',
'continuous-100' and 'gavel-fifo' each broke at their hyphen onto two lines beside the wide
source column. Skips, saying so, where there is no chromium or no playwright."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from dlsched.reproduce.output import render_html
from dlsched.reproduce.rows import ReproduceRow

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test needs playwright: pip install -e '.[test]'")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium executable on PATH (Debian: apt-get install -y "
                             "chromium; .ci/run does it)")

SOURCE = ("stanford-futuredata/gavel scheduler/scripts/drivers/simulate_scheduler_with_trace.py "
          "-p max_min_fairness_perf -c 36:36:36 --seed 0 --solver ECOS on the first 100 jobs: "
          "Average job completion time")
ROWS = [ReproduceRow("gavel-osdi20", "continuous-100", policy, metric, ours, ref, SOURCE)
        for policy, metric, ours, ref in (("gavel-fifo", "jct_mean_s", 9567.57, 9633.98),
                                          ("gavel-las", "makespan_s", 24270.7, 24195.0))]

# Each cell's line boxes (one per line the browser wraps its text onto) and its text alignment.
CELLS = """() => [...document.querySelectorAll('tr')].slice(1).map(row =>
  [...row.cells].map(cell => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    return [cell.textContent, range.getClientRects().length,
            getComputedStyle(cell).textAlign];
  }))"""


def cells_as_shown(page_html: str, tmp_path: Path, width: int) -> Any:
    path = tmp_path / "reproduce.html"
    path.write_text(page_html)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(path.as_uri())
            return page.evaluate(CELLS)
        finally:
            browser.close()


@pytest.mark.parametrize("width", [1200, 420], ids=["desktop", "narrow"])
def test_names_stay_whole_and_numbers_align_right(tmp_path: Path, width: int) -> None:
    rows = cells_as_shown(render_html(ROWS, "t", "dlsched reproduce gavel-osdi20", "<svg/>"),
                          tmp_path, width)
    for row in rows:
        names, numbers = row[:4], row[4:7]
        assert all(lines == 1 for _, lines, _ in names), names
        assert all(lines == 1 and align == "right" for _, lines, align in numbers), numbers
    assert rows[0][6][0] == "-0.7%"
