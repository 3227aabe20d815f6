"""The dashboard over HTTP (no browser; ``test_dashboard_browser.py`` drives a real one): its
token handling, what the overview and a job's page show, tenants' views, the cancel button's
endpoint, and the API endpoints it draws from (``/v1/tenants``, ``/v1/utilization``,
``/v1/jobs/ID/progress``)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from builders import make_cluster
from dashboard_scenario import populate, tenants
from runtime_helpers import Live, worker
from test_service_e2e import submit, wait_status

from dlsched.runtime.auth import Tenant, TokenTable
from dlsched.runtime.dashboard.routes import COOKIE, CSRF_HEADER, _local

TOKEN = "dashboard-token-0123456789"


def page(live: Live, path: str, cookie: str | None = None) -> httpx.Response:
    cookies = {COOKIE: cookie} if cookie else None
    return httpx.get(live.url + path, cookies=cookies, follow_redirects=False, timeout=30)


def test_a_page_needs_the_token_given_once_by_form_or_query(live: Callable[..., Live]) -> None:
    handle = live(token=TOKEN)
    assert page(handle, "/").status_code == 303
    assert page(handle, "/").headers["location"] == "/login?next=%2F"
    assert page(handle, "/?fragment=1").status_code == 401  # the script sends to the login
    wrong = httpx.post(handle.url + "/login", data={"token": "nope", "next": "/"})
    assert wrong.status_code == 401 and "wrong token" in wrong.text
    right = httpx.post(handle.url + "/login", data={"token": TOKEN, "next": "/?state=active"},
                       follow_redirects=False)
    assert right.status_code == 303 and right.headers["location"] == "/?state=active"
    cookie = right.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}={TOKEN};") and "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower()
    assert "Jobs" in page(handle, "/", TOKEN).text
    by_query = page(handle, f"/?token={TOKEN}&state=running")
    assert by_query.status_code == 303 and by_query.headers["location"] == "/?state=running"
    assert TOKEN in by_query.headers["set-cookie"]
    # The REST API's contract is unchanged: a bearer token, never the cookie.
    assert page(handle, "/v1/jobs", TOKEN).status_code == 401


def test_the_overview_says_why_jobs_wait_and_shows_tenant_quotas(
        live: Callable[..., Live], out: Path) -> None:
    handle = live(tenants=tenants())
    jobs = populate(handle, out)
    html = page(handle, "/?fragment=1").text
    row = html.split(f'id="row-{jobs.waiting}"')[1].split("</tr>")[0]
    assert "pending" in row and "insufficient unused quota" in row
    assert '<td class="num">1</td>' in row  # first in its cluster queue's line
    assert 'class="tenant"' in html and "team-b" in html
    quotas = {t["name"]: t for t in handle.http.get("/v1/tenants").json()}
    assert (quotas["team-a"]["gpus_used"], quotas["team-a"]["gpus_nominal"]) == (3.0, 2.0)
    assert quotas["team-a"]["gpus_borrowed"] == 1.0 and quotas["team-a"]["fair_share"] > 0
    assert quotas["team-b"]["gpus_borrowed"] == 0.0 and quotas["team-b"]["pending"] == 1
    only = page(handle, "/?fragment=1&state=finished").text
    assert jobs.finished in only and jobs.waiting not in only
    detail = page(handle, f"/jobs/{jobs.borrowing}").text
    assert "resnet-big" in detail and "Attempts" in detail and "local:0" in detail


def test_quota_use_counts_the_jobs_the_last_cycle_started(live: Callable[..., Live],
                                                          out: Path) -> None:
    """The tenant layer's ledger is as of a cycle's start: a job that cycle started showed
    ``0 / 2`` in the dashboard and ``gpus_used`` 0 until another cycle ran (a quiet service,
    or one just restarted, stays so)."""
    handle = live(tenants=tenants())
    running = submit(handle, worker("sleep", out, 600), 1, queue="vision", name="one")
    wait_status(handle, running, "running")
    quotas = {t["name"]: t for t in handle.http.get("/v1/tenants").json()}
    assert (quotas["team-a"]["running"], quotas["team-a"]["gpus_used"]) == (1, 1.0)
    assert quotas["team-a"]["quotas"][0]["used"] == 1.0 and quotas["team-b"]["gpus_used"] == 0
    row = page(handle, "/?fragment=1").text.split('class="tenant"')[1].split("</tr>")[0]
    assert "1 / 2" in row, row


def test_a_tenant_sees_and_cancels_only_its_own_jobs(live: Callable[..., Live],
                                                     out: Path) -> None:
    a, b = "a" * 20, "b" * 20
    table = TokenTable((Tenant("team-a", a, frozenset({"a"})),
                        Tenant("team-b", b, frozenset({"b"}))))
    handle = live(token=TOKEN, tokens=table)
    as_a = httpx.Client(base_url=handle.url, headers={"Authorization": f"Bearer {a}"})
    as_b = httpx.Client(base_url=handle.url, headers={"Authorization": f"Bearer {b}"})
    mine = as_a.post("/v1/jobs", json={"command": worker("sleep", out, 600), "gpus": 1,
                                       "queue": "a"}).json()["id"]
    theirs = as_b.post("/v1/jobs", json={"command": worker("sleep", out, 600), "gpus": 1,
                                         "queue": "b"}).json()["id"]
    html = page(handle, "/", a).text
    assert mine in html and theirs not in html
    by_b = page(handle, "/?fragment=1&user=team-b", TOKEN).text  # the admin filters by user
    assert f'id="row-{theirs}"' in by_b and f'id="row-{mine}"' not in by_b
    listed = handle.http.get("/v1/jobs", params={"submitted_by": "team-a"}).json()
    assert [(j["id"], j["submitted_by"]) for j in listed] == [(mine, "team-a")]
    assert page(handle, f"/jobs/{theirs}", a).status_code == 404
    cancel = httpx.post(f"{handle.url}/ui/jobs/{theirs}/cancel", cookies={COOKIE: a},
                        headers={CSRF_HEADER: "1"})
    assert cancel.status_code == 404
    wait_status(handle, theirs, "running")
    worker_token = table.worker_token(mine)  # a job's workers may not log in
    assert page(handle, "/", worker_token).status_code == 303
    assert httpx.post(handle.url + "/login", data={"token": worker_token}).status_code == 401


def test_cancel_from_the_page_needs_the_dashboard_header(live: Callable[..., Live],
                                                         out: Path) -> None:
    handle = live()
    job_id = submit(handle, worker("sleep", out, 600), 1)
    url = f"{handle.url}/ui/jobs/{job_id}/cancel"
    assert httpx.post(url).status_code == 403  # what a form on another site could send
    assert handle.http.get(f"/v1/jobs/{job_id}").json()["status"] != "cancelled"
    assert httpx.post(url, headers={CSRF_HEADER: "1"}).json()["status"] == "cancelled"
    assert httpx.post(url, headers={CSRF_HEADER: "1"}).status_code == 409


def test_utilization_adds_up_the_attempts_gpu_seconds(live: Callable[..., Live],
                                                      out: Path) -> None:
    handle = live()
    job_id = submit(handle, worker("sleep", out, 0.3), 2)
    wait_status(handle, job_id, "finished")
    attempt = handle.http.get(f"/v1/jobs/{job_id}").json()["attempt_history"][0]
    held = 2 * (attempt["ended_at"] - attempt["started_at"])
    view = handle.http.get("/v1/utilization", params={"hours": 1, "points": 50}).json()
    assert view["gpus_total"] == 4 and len(view["points"]) == 50
    assert sum(p["gpus_busy"] for p in view["points"]) * view["step_seconds"] == \
        pytest.approx(held, rel=1e-3)
    assert handle.http.get("/v1/utilization", params={"hours": "nan"}).status_code == 422


def test_utilization_counts_a_fraction_of_a_gpu_as_its_share(live: Callable[..., Live],
                                                             out: Path) -> None:
    """Two half-GPU jobs on one GPU are one GPU busy (each counted a whole GPU, the chart
    rose above the cluster's GPUs while the header said fewer were allocated)."""
    handle = live(gpus=1)
    halves = [submit(handle, worker("sleep", out, 0.3), 1, gpu_share=0.5) for _ in range(2)]
    for job_id in halves:
        wait_status(handle, job_id, "finished")
    held = sum(0.5 * (a["ended_at"] - a["started_at"]) for job_id in halves
               for a in handle.http.get(f"/v1/jobs/{job_id}").json()["attempt_history"])
    view = handle.http.get("/v1/utilization", params={"hours": 1, "points": 50}).json()
    assert sum(p["gpus_busy"] for p in view["points"]) * view["step_seconds"] == \
        pytest.approx(held, rel=1e-3)
    assert max(p["gpus_busy"] for p in view["points"]) <= 1.0 + 1e-9


def test_progress_reports_are_kept_and_plotted(live: Callable[..., Live], out: Path) -> None:
    handle = live()
    job_id = submit(handle, worker("sleep", out, 600), 1)
    wait_status(handle, job_id, "running")
    for step, speed in ((10, 50.0), (20, 60.0)):
        sent = handle.http.post(f"/v1/jobs/{job_id}/progress",
                                json={"step": step, "samples_per_second": speed})
        assert sent.status_code == 204
    reports = handle.http.get(f"/v1/jobs/{job_id}/progress").json()
    assert [(r["step"], r["samples_per_second"]) for r in reports] == [(10, 50.0), (20, 60.0)]
    assert handle.http.get("/v1/jobs/job-999999/progress").status_code == 404
    html = page(handle, f"/jobs/{job_id}").text
    assert '<polyline class="chart-line"' in html and "step 20" in html
    # its axis has no unit: the heading gives it
    assert 'Throughput reports <span class="muted small">(samples/s)</span>' in html


@pytest.mark.parametrize(("given", "kept"), [
    ("/jobs/job-000001?fragment=1", "/jobs/job-000001?fragment=1"),
    ("http://127.0.0.1:8765/?state=running", "/?state=running"),
    ("//evil.example/x", "/"), ("https://evil.example", "/"), ("javascript:alert(1)", "/"),
], ids=["path", "own-url", "protocol-relative", "other-site", "script"])
def test_login_redirects_only_within_the_site(given: str, kept: str) -> None:
    assert _local(given) == kept



def test_with_tenants_default_is_not_listed_as_a_queue(live: Callable[..., Live]) -> None:
    """``default`` is no queue of a tenant file (a job there is a 400), yet ``/v1/queues`` and
    ``dlsched status`` always listed it."""
    handle = live(tenants=tenants())
    assert handle.http.post("/v1/jobs", json={"command": ["true"], "gpus": 1}
                            ).status_code == 400
    assert handle.http.get("/v1/queues").json() == []


def test_pages_read_well_with_no_jobs_and_for_an_ended_job(live: Callable[..., Live],
                                                          out: Path) -> None:
    # Seen in Chromium: every page logged a 404 for /favicon.ico as a console error; an empty
    # overview said "The newest 0 jobs"; a failed job's reason was headed "why it waits", its
    # attempts' GPU ids sat under "GPUs" (a 1-GPU job on GPU 2 read as 2 GPUs) and its
    # submission event said "1 GPUs".
    handle = live(max_attempts=1)
    overview = page(handle, "/").text
    assert '<link rel="icon" href="data:,">' in overview
    assert "newest 0 jobs" not in overview and "no jobs" in overview
    job_id = submit(handle, worker("fail", out), 1)
    wait_status(handle, job_id, "failed")
    html = page(handle, f"/jobs/{job_id}").text
    assert "<dt>why it ended</dt>" in html and "why it waits" not in html
    assert "<th>on GPUs</th>" in html and "<th>GPUs</th>" not in html
    assert "1 GPU, queue default" in html
    assert "The newest 1 job." in page(handle, "/").text


def test_a_fraction_of_a_gpu_reads_as_its_share(live: Callable[..., Live], out: Path) -> None:
    """Seen in Chromium: a job submitted with ``--gpus 0.5`` read "1" in the overview's GPUs
    column and "GPUs 1" on its page, as if it held a whole GPU, where ``dlsched jobs`` says
    0.5 and ``dlsched jobs ID`` "per worker: share 0.5"."""
    handle = live(gpus=1)
    job_id = submit(handle, worker("sleep", out, 600), 1, gpu_share=0.5)
    wait_status(handle, job_id, "running")
    row = page(handle, "/").text.split(f'id="row-{job_id}"')[1].split("</tr>")[0]
    assert '<td class="num">0.5</td>' in row
    html = page(handle, f"/jobs/{job_id}").text
    assert html.split("<dt>GPUs</dt>")[1].split("</dd>")[0] == "<dd>1; per worker: share 0.5"
    assert "1 GPU (share 0.5), queue default" in html  # its submitted event said "1 GPU"


def test_utilization_now_counts_a_fraction_as_its_share(live: Callable[..., Live],
                                                       out: Path) -> None:
    """Seen in Chromium: beside a header of "2.5/4 GPUs allocated", the GPU type's line read
    "allocated 3" and "utilization now 75%" (each GPU holding a worker counted whole)."""
    handle = live(gpus=2)
    whole = submit(handle, worker("sleep", out, 600), 1)
    half = submit(handle, worker("sleep", out, 600), 1, gpu_share=0.5)
    for job_id in (whole, half):
        wait_status(handle, job_id, "running")
    cluster = page(handle, "/").text.split('id="cluster"')[1].split("</table>")[0]
    assert '<td class="num">2</td><td class="num">1.5</td><td class="num">0</td>' in cluster
    assert ">75%</span>" in cluster


def test_an_attempts_gpus_are_named_as_the_overview_names_them(live: Callable[..., Live],
                                                              out: Path) -> None:
    """Seen in Chromium: a job on the second node showed "on gpu-1:0, gpu-1:1" above and
    "on GPUs 2, 3" (cluster-wide ids) in its attempts, beside node rows numbered 0-1."""
    handle = live(cluster=make_cluster(nodes=2, gpus=2))
    first = submit(handle, worker("sleep", out, 600), 2)
    wait_status(handle, first, "running")
    second = submit(handle, worker("sleep", out, 600), 2)
    wait_status(handle, second, "running")
    html = page(handle, f"/jobs/{second}").text
    attempts = html.split('id="attempts"')[1].split("</table>")[0]
    assert "<td>n1:0, n1:1</td>" in attempts
    # and its events said "on GPUs [2, 3]" below them
    assert "on n1:0, n1:1" in html and "on GPUs [" not in html


PRIORITY_TENANTS = """flavors:
  - {name: t4, gpu_types: [T4]}
cluster_queues:
  - name: research
    quotas: {t4: {gpu: 4}}
    preemption: {within_cluster_queue: lower-priority}
"""


def test_a_higher_priority_job_preempts_and_the_victims_page_says_so(
        live: Callable[..., Live], out: Path) -> None:
    """Kueue's within-cluster-queue preemption on real processes: the urgent job takes the
    GPUs of the lower-priority one, which waits and shows "preempted 1 time" (it read
    "1 times")."""
    from dlsched.tenancy.loader import parse_tenants

    handle = live(tenants=parse_tenants(PRIORITY_TENANTS, "tenants.yaml"))
    low = submit(handle, worker("sleep", out, 600), 4, queue="research", name="sweep")
    wait_status(handle, low, "running")
    urgent = submit(handle, worker("sleep", out, 600), 4, queue="research", priority=10,
                    name="urgent")
    wait_status(handle, urgent, "running")
    victim = wait_status(handle, low, "preempted")
    assert "preempted by " + urgent in [e["message"] for e in
                                        handle.http.get(f"/v1/jobs/{low}/events").json()]
    assert victim["attempts"] == 1
    assert "<dd>1 time; resized 0 times</dd>" in page(handle, f"/jobs/{low}").text


def test_jobs_submitted_one_after_another_get_hues_far_apart() -> None:
    """GPUs are coloured by job: neighbours in submission order, which run side by side,
    must not look alike (a hash of the id gave job-000001 and job-000004 hues 32 apart)."""
    from dlsched.runtime.dashboard.routes import _hue

    hues = [_hue(f"job-{n:06d}") for n in range(1, 41)]
    for gap in range(1, 5):
        for a, b in zip(hues, hues[gap:], strict=False):
            assert min(abs(a - b), 360 - abs(a - b)) >= 50, (gap, a, b)
    assert _hue("job-000007") == _hue("job-000007") and 0 <= _hue("custom id") < 360


def test_a_filter_on_a_queue_that_is_not_there_shows_it(live: Callable[..., Live]) -> None:
    """``/?queue=nope`` said "no jobs match the filter" while the queue list read "any", as if
    no queue were chosen."""
    handle = live()
    html = page(handle, "/?queue=nope&user=nobody").text
    assert '<option value="nope" selected>nope (no such queue)</option>' in html
    assert '<option value="nobody" selected>nobody (no jobs)</option>' in html
    assert "no jobs match the filter" in html
    plain = page(handle, "/").text
    assert "(no such queue)" not in plain and "(no jobs)" not in plain


def test_the_job_list_says_how_many_it_leaves_out(live: Callable[..., Live], out: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """It said "The newest 200 jobs (at most 200; filter to see others)": never how many there
    were, and so also when there were exactly 200."""
    from dlsched.runtime.dashboard import pages

    monkeypatch.setattr(pages, "JOBS_SHOWN", 3)
    handle = live()
    for _ in range(5):
        submit(handle, worker("sleep", out, 600), 1)
    html = page(handle, "/").text
    assert "The newest 3 jobs of 5 (filter to see the others)." in html
    monkeypatch.setattr(pages, "JOBS_SHOWN", 5)
    assert "The newest 5 jobs. Place" in page(handle, "/").text


@pytest.mark.parametrize(("query", "named", "kept"), [
    ("hours=x&state=active", "<code>hours=x</code>: Input should be a valid number",
     "/?state=active"),
    ("hours=1000", "<code>hours=1000</code>: Input should be less than or equal to 168", "/"),
    ("hours=-1&fragment=maybe", "<code>fragment=maybe</code>: Input should be a valid boolean",
     "/"),
    ("hours=%3Cb%3Ex", "<code>hours=&lt;b&gt;x</code>", "/"),
    ("hours=%ED%A0%80", "<code>hours=", "/"),
], ids=["not-a-number", "out-of-range", "two-at-once", "escaped", "not-utf-8"])
def test_a_page_with_a_bad_query_value_answers_a_page_naming_it(
        live: Callable[..., Live], query: str, named: str, kept: str) -> None:
    """``/?hours=x`` showed FastAPI's JSON error, raw, in the browser; the API keeps it."""
    handle = live(token=TOKEN)
    answer = page(handle, f"/?{query}", TOKEN)
    assert answer.status_code == 422 and answer.headers["content-type"].startswith("text/html")
    assert "<h1>This page cannot show that address</h1>" in answer.text
    assert named in answer.text, answer.text
    assert f'<a href="{kept}">Open the page without' in answer.text.replace("&amp;", "&")
    api = httpx.get(handle.url + "/v1/utilization", params={"hours": "x"},
                    headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    assert api.status_code == 422 and api.json()["detail"][0]["loc"] == ["query", "hours"]


def test_a_jobs_page_shows_its_command_as_a_shell_line(live: Callable[..., Live]) -> None:
    """The page joined the argv by spaces (``python -c import sys; sys.exit(3)``): copied into
    a shell, it ran something else."""
    import html

    handle = live()
    job_id = handle.http.post("/v1/jobs", json={"command": ["sh", "-c", "sleep 600; exit 3"],
                                                "gpus": 1}).json()["id"]
    shown = html.unescape(page(handle, f"/jobs/{job_id}").text)
    assert "<code>sh -c 'sleep 600; exit 3'</code>" in shown


def test_the_submitter_filter_tells_everyone_from_the_user_anyone(
        live: Callable[..., Live]) -> None:
    """Without a token every job is submitted by ``anyone``: the filter listed "anyone" (no
    filter) above "anyone" (that user), two choices alike that mean different things."""
    import re

    handle = live()
    submit(handle, command=["true"], gpus=1)
    html = page(handle, "/").text
    user = html[html.index('<select name="user">'):]
    labels = re.findall(r"<option [^>]*>([^<]*)</option>", user[:user.index("</select>")])
    assert labels == ["everyone", "anyone (no token)"], labels


@pytest.mark.parametrize(("query", "named", "kept"), [
    ("state=runing&queue=q", "<code>state=runing</code>: not a state of the filter (any, "
     "active, pending, running, preempted, finished, failed, cancelled); did you mean "
     "&#39;running&#39;?", "/?queue=q"),
    ("state=RUNNING", "did you mean &#39;running&#39;?", "/"),
], ids=["typo", "case"])
def test_a_state_the_filter_does_not_know_answers_a_page_naming_it(
        live: Callable[..., Live], query: str, named: str, kept: str) -> None:
    """``/?state=runing`` listed every job, the state list reading "any": the filter was
    dropped without a word, as ``?hours=x`` no longer is (``/v1/jobs?status=runing`` is a 422
    naming the closest state)."""
    handle = live()
    answer = page(handle, f"/?{query}")
    assert answer.status_code == 422, answer.text
    assert named in answer.text, answer.text
    assert f'<a href="{kept}">Open the page without state</a>' in answer.text
    assert page(handle, "/?state=active").status_code == 200
    assert page(handle, "/?state=").status_code == 200
    assert page(handle, "/?state=any").status_code == 200  # the choice the list names


def test_a_jobs_throughput_chart_leaves_the_time_between_attempts_blank() -> None:
    """A job that failed twice and was retried after a backoff read as one line at its
    speed across the gaps, as if it had run meanwhile: each attempt is its own line."""
    from dlsched.runtime.dashboard.charts import Series, time_chart

    times, speeds = [0.0, 1.0, 2.0, 10.0, 11.0, 20.0], [100.0, 120.0, 110.0, 90.0, 95.0, 80.0]
    chart = time_chart(Series(times, speeds, runs=[1, 1, 1, 2, 2, 3]), "samples per second")
    assert chart.count('<polyline class="chart-line"') == 3
    assert chart.count('<polygon class="chart-area"') == 3
    single = time_chart(Series(times, speeds), "samples per second")
    assert single.count('<polyline class="chart-line"') == 1


def test_a_queue_whose_jobs_all_ended_is_one_the_filter_offers(
        live: Callable[..., Live]) -> None:
    """A queue with no job waiting or running was missing from the queue filter: its ended
    jobs could not be picked, and ``/?queue=team-b`` read "team-b (no such queue)" above
    team-b's own jobs."""
    handle = live()
    job_id = submit(handle, [sys.executable, "-c", "pass"], 1, queue="team-b", name="done")
    wait_status(handle, job_id, "finished")
    chosen = page(handle, "/?queue=team-b").text
    assert '<option value="team-b" selected>team-b</option>' in chosen
    assert "(no such queue)" not in chosen and f'href="/jobs/{job_id}"' in chosen
    assert '<option value="team-b" >team-b</option>' in page(handle, "/").text


def test_the_headers_api_link_opens_a_page_that_needs_no_internet(
        live: Callable[..., Live]) -> None:
    """The header's "API" opened ``/docs``, Swagger UI, whose scripts come from a CDN: on a
    cluster without the internet a blank page. It opens a list of the API's paths, made on
    the server, with the schema and ``/docs`` linked."""
    handle = live(token=TOKEN)
    overview = page(handle, "/", cookie=TOKEN).text
    assert '<a class="muted" href="/api">API</a>' in overview
    listing = page(handle, "/api")
    assert listing.status_code == 200 and "cdn." not in listing.text.replace(
        "cdn.jsdelivr.net:", "")  # named in the text, never loaded
    assert "<script src=\"http" not in listing.text and 'href="/openapi.json"' in listing.text
    assert "<td><code>GET</code></td><td class=\"path\"><code>/v1/jobs</code></td>" in (
        listing.text)
    assert "<td><code>DELETE</code></td><td class=\"path\"><code>/v1/jobs/{job_id}</code>" in (
        listing.text)  # cancel
    assert "GPUs held by running attempts over the last hours" in listing.text


def test_a_jobs_page_says_when_its_chart_shows_only_the_last_reports(
        live: Callable[..., Live], out: Path) -> None:
    """At the 500 reports a job keeps, the page still read "500 reports of its workers, kept
    since the service started", as if the chart went back to the job's start."""
    handle = live()
    handle.service.progress_log.per_job = 3
    job_id = submit(handle, worker("sleep", out, 600), 1)
    wait_status(handle, job_id, "running")
    for step in (1, 2):
        handle.http.post(f"/v1/jobs/{job_id}/progress",
                         json={"step": step, "samples_per_second": 10.0})
    assert "2 reports of its workers" in page(handle, f"/jobs/{job_id}").text
    for step in (3, 4):
        handle.http.post(f"/v1/jobs/{job_id}/progress",
                         json={"step": step, "samples_per_second": 10.0})
    html = page(handle, f"/jobs/{job_id}").text
    assert "The last 3 reports of its workers" in html and "kept since" not in html
