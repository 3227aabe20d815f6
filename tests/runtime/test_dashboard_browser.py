"""The dashboard in a real browser: headless Chromium (Debian's ``chromium`` package) driven by
Playwright for Python, pointed at that executable (no ``playwright install``). A service with
the local executor and tenant quotas runs jobs; the browser logs in with the token, finds why
a job waits, sees a job submitted meanwhile appear without a reload, cancels a job from the
page, opens a job's page, and takes a screenshot.

``.ci/run`` installs chromium when it is missing; the test skips, saying so, only where there is
no chromium (or no playwright) at all."""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dashboard_scenario import populate, tenants
from runtime_helpers import Live, wait_for, worker
from test_service_e2e import submit

sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the browser test needs playwright: pip install -e '.[test]'")

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
TOKEN = "browser-token-0123456789"
WAIT_MS = 30_000  # the page polls every 2 s; Chromium on 2 loaded cores is slow
# the lines an element's text takes: one client rect per line box
TEXT_LINES = ("(e) => { const text = document.createRange(); text.selectNodeContents(e); "
              "return new Set([...text.getClientRects()].map((r) => Math.round(r.top))).size; }")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium executable on PATH (Debian: apt-get install -y "
                             "chromium; .ci/run does it)")


def headless_chromium(playwright: Any) -> Any:
    """Debian's chromium, headless. --no-sandbox: CI runs as root, where Chromium's sandbox
    refuses to start; --disable-dev-shm-usage: a container's /dev/shm may be too small for it."""
    return playwright.chromium.launch(
        executable_path=CHROMIUM, args=["--no-sandbox", "--disable-dev-shm-usage"])


def test_the_dashboard_in_chromium(live: Callable[..., Live], out: Path, tmp_path: Path,
                                   request: pytest.FixtureRequest) -> None:
    handle = live(token=TOKEN, tenants=tenants())
    jobs = populate(handle, out)
    expect = sync_api.expect
    expect.set_options(timeout=30_000)  # not the default 5 s: 2 loaded cores
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(handle.url + "/")
            page.fill("input[name=token]", TOKEN)
            page.click("button[type=submit]")
            waiting = page.locator(f"#row-{jobs.waiting}")
            expect(waiting.locator(".reason")).to_contain_text("insufficient unused quota")
            expect(waiting.locator(".badge")).to_have_text("pending")
            expect(page.locator(f"#row-{jobs.borrowing} .badge")).to_have_text("running")
            expect(page.locator(f"#row-{jobs.finished} .badge")).to_have_text("finished")
            expect(page.locator("tr.tenant")).to_have_count(2)
            # 24-hour, as the chart's axis and the job pages (not "12:04:24 AM")
            expect(page.locator("#live-status")).to_have_text(
                re.compile(r"^live, updated \d\d:\d\d:\d\d$"))

            later = submit(handle, worker("sleep", out, 600), 1, queue="team-b", name="later")
            expect(page.locator(f"#row-{later}")).to_be_visible(timeout=WAIT_MS)  # live

            page.once("dialog", lambda dialog: dialog.accept())
            page.click(f"#row-{later} button[data-cancel]")
            expect(page.locator(f"#row-{later} .badge")).to_have_text("cancelled",
                                                                     timeout=WAIT_MS)
            assert handle.http.get(f"/v1/jobs/{later}").json()["status"] == "cancelled"

            shot = tmp_path / "dashboard.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            copy = request.config.getoption("--dashboard-screenshot")
            if copy:
                shutil.copyfile(shot, copy)

            page.click(f"#row-{jobs.borrowing} a")
            expect(page.locator("h1")).to_contain_text(jobs.borrowing)
            expect(page.locator("#attempts")).to_contain_text("running")
        finally:
            browser.close()


def test_a_job_page_shows_the_end_of_its_log_and_keeps_it_there(
        live: Callable[..., Live]) -> None:
    """The log box opened at the log's first line and each 2-s refresh put it back there: a
    running job's latest lines were never in view, nor stayed where the reader scrolled."""
    handle = live()
    lines = "import sys, time\nfor i in range(400): print('line', i)\nsys.stdout.flush()\n"
    job_id = submit(handle, [sys.executable, "-c", lines + "time.sleep(600)"], 1)
    wait_for(lambda: "line 399" in handle.http.get(f"/v1/jobs/{job_id}/logs").text, 30,
             "the job's log")
    place = "(log) => log.scrollHeight - log.scrollTop - log.clientHeight"
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{handle.url}/jobs/{job_id}")
            assert page.eval_on_selector("pre.log", place) < 4  # at its end
            page.eval_on_selector("pre.log", "(log) => { log.scrollTop = 100; }")
            page.wait_for_function("document.getElementById('live-status').textContent"
                                   ".startsWith('live, updated')", timeout=WAIT_MS)
            assert page.eval_on_selector("pre.log", "(log) => log.scrollTop") == 100
        finally:
            browser.close()


def test_job_ids_and_queues_stay_on_one_line(live: Callable[..., Live]) -> None:
    """Beside a long job name at 1280 px the listing broke ids and queues at their hyphen
    ('job-' above '000001', 'team-' above '0'): an id one could not read or copy whole."""
    handle = live()
    job_id = submit(handle, [sys.executable, "-c", "import time; time.sleep(600)"], 1,
                    queue="team-0", name="exp-1-a-rather-long-job-name-for-testing-" * 3)
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(handle.url + "/")
            row = f"#row-{job_id}"
            sync_api.expect(page.locator(row)).to_be_visible(timeout=WAIT_MS)
            id_lines, name_lines, queue_lines = (
                page.eval_on_selector(f"{row} td:nth-child({n})", TEXT_LINES) for n in (1, 2, 4))
            assert name_lines > 1  # the name wraps; the id and the queue do not
            assert (id_lines, queue_lines) == (1, 1)
        finally:
            browser.close()


def test_why_a_job_waits_stays_readable_in_a_narrow_window(live: Callable[..., Live]) -> None:
    """At 800 px (half a laptop's screen) the table squeezed "why it waits" to a word a line
    (about 60 px; a failure's message ran 10 lines) and put it past the card's edge anyway:
    the reason keeps a readable width and the card scrolls sideways."""
    handle = live(gpus=1)
    sleep = [sys.executable, "-c", "import time; time.sleep(600)"]
    submit(handle, sleep, 1, name="holder-" * 6)
    waiting = submit(handle, sleep, 1, name="waiter-" * 6)
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 800, "height": 900})
            page.goto(handle.url + "/")
            reason = page.locator(f"#row-{waiting} td.reason")
            sync_api.expect(reason).to_contain_text("needs 1 GPU", timeout=WAIT_MS)
            assert reason.evaluate("(cell) => cell.getBoundingClientRect().width") >= 180
        finally:
            browser.close()


def test_a_phone_wide_window_shows_the_overview_without_sideways_scrolling(
        live: Callable[..., Live]) -> None:
    """Below about 560 px (a phone, a narrow split screen) the cluster and utilization cards
    kept their 520 px minimum: the whole page scrolled sideways past the header bar. Each
    card now fits the window (a wide table scrolls inside its card)."""
    handle = live()
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 400, "height": 900})
            page.goto(handle.url + "/")
            sync_api.expect(page.locator("#cluster")).to_be_visible(timeout=WAIT_MS)
            widths = page.evaluate("() => [document.documentElement.scrollWidth, "
                                   "document.querySelector('#utilization')"
                                   ".getBoundingClientRect().right]")
            assert widths[0] <= 400 and widths[1] <= 400, widths
        finally:
            browser.close()


def test_an_address_with_a_bad_value_reads_as_a_page_that_leads_back(
        live: Callable[..., Live]) -> None:
    """``/?hours=x`` showed FastAPI's JSON error in the browser: now a page names the
    parameter, and its link opens the overview without it."""
    handle = live()
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            answer = page.goto(handle.url + "/?hours=x&state=active")
            assert answer is not None and answer.status == 422
            expect = sync_api.expect
            expect(page.locator("h1")).to_have_text("This page cannot show that address")
            expect(page.locator("main li")).to_contain_text(
                "hours=x: Input should be a valid number")
            page.click("text=Open the page without hours")
            expect(page.locator("#live-status")).to_contain_text("live, updated",
                                                                 timeout=WAIT_MS)
            assert page.url == handle.url + "/?state=active"
        finally:
            browser.close()


def test_a_phone_wide_window_keeps_the_filters_and_a_jobs_id_in_reach(
        live: Callable[..., Live]) -> None:
    """At 420 px the job filter's form stayed one row: "submitted by" and the Filter button
    lay past the card's edge, out of sight; and a job's page broke its id in the heading at
    the hyphen ('job-' above '000004')."""
    handle = live()
    job_id = submit(handle, [sys.executable, "-c", "import time; time.sleep(600)"], 1,
                    name="an-elastic-run")
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 420, "height": 900})
            page.goto(handle.url + "/")
            button = page.locator("form.filters button[type=submit]")
            sync_api.expect(button).to_be_visible(timeout=WAIT_MS)
            for control in (button, page.locator("form.filters select[name=user]")):
                assert control.evaluate("(e) => e.getBoundingClientRect().right") <= 420
            page.goto(f"{handle.url}/jobs/{job_id}")
            sync_api.expect(page.locator("h1")).to_contain_text(job_id, timeout=WAIT_MS)
            assert page.eval_on_selector("h1 .id", TEXT_LINES) == 1
        finally:
            browser.close()


def test_a_phone_wide_window_keeps_the_signed_in_header_on_whole_words(
        live: Callable[..., Live]) -> None:
    """At 420 px, signed in, the header broke "live, updated 01:35:13" and "log out" over two
    lines each: its items stay whole, and the row wraps, not the page sideways."""
    handle = live(token=TOKEN)
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 420, "height": 900})
            page.goto(f"{handle.url}/?token={TOKEN}")
            status = page.locator("#live-status")
            sync_api.expect(status).to_contain_text("live, updated", timeout=WAIT_MS)
            assert status.evaluate(TEXT_LINES) == 1
            assert page.eval_on_selector("header.top button.link", TEXT_LINES) == 1
            assert page.evaluate("() => document.documentElement.scrollWidth") <= 420
        finally:
            browser.close()


def test_a_jobs_attempt_and_event_times_stay_on_one_line(live: Callable[..., Live]) -> None:
    """In the attempts card (half the page at 1400 px) an attempt's start read "2026-12-08"
    over "01:34:35", on three lines beside a long message; at 420 px the events' times did."""
    handle = live()
    message = "import sys; print('x'); sys.exit('a rather long reason to fail ' * 4)"
    job_id = submit(handle, [sys.executable, "-c", message], 1)
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            for width in (1400, 420):
                page = browser.new_page(viewport={"width": width, "height": 900})
                page.goto(f"{handle.url}/jobs/{job_id}")
                sync_api.expect(page.locator("#attempts td.when").first).to_be_visible(
                    timeout=WAIT_MS)
                assert page.eval_on_selector("#attempts td.when", TEXT_LINES) == 1, width
                assert page.eval_on_selector("#events td.when", TEXT_LINES) == 1, width
                page.close()
        finally:
            browser.close()


def test_a_phone_wide_window_draws_the_charts_labels_readable(
        live: Callable[..., Live]) -> None:
    """A chart scales with its card: at 420 px its axis labels were about 5 px high."""
    handle = live()
    with sync_api.sync_playwright() as playwright:
        browser = headless_chromium(playwright)
        try:
            page = browser.new_page(viewport={"width": 420, "height": 900})
            page.goto(handle.url + "/")
            label = page.locator("#utilization .chart-label").first
            sync_api.expect(label).to_be_visible(timeout=WAIT_MS)
            assert label.evaluate("(e) => e.getBoundingClientRect().height") >= 8
        finally:
            browser.close()
