"""What the runtime verbs show and accept (issue 11 items 13, 14, 15): states checked, JSON
output, events with their times, progress in words, a retry not shown as a preemption, submit
waiting for a service that is starting, the port named when it is taken."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
from runtime_helpers import Live, wait_for, worker
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.errors import ConfigError
from dlsched.runtime.backoff import RetryBackoff
from dlsched.runtime.cli import State, _state
from dlsched.runtime.client import Client, ClientError
from dlsched.runtime.display import progress_text, shown_status
from dlsched.runtime.server import bind

runner = CliRunner()


def cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.mark.parametrize(("typed", "closest"), [
    ("runing", "running"), ("canceled", "cancelled"), ("Retry", "retrying"),
], ids=["running", "cancelled", "retrying-any-case"])
def test_an_unknown_state_is_refused_naming_the_closest(typed: str, closest: str) -> None:
    """Session 30: typer's own message listed the states and left the reader to find
    'running', where every other mistyped choice of the CLI names the closest."""
    code, output = cli("jobs", "--status", typed, "--url", "http://127.0.0.1:9")
    text = " ".join(output.split())
    assert code == 2 and f"{typed!r} is not one of pending, running," in text, text
    assert f"did you mean {closest!r}?" in text, text


@pytest.mark.parametrize("typed", ["retrying", "RUNNING", "Cancelled"])
def test_a_state_is_read_in_any_case(typed: str) -> None:
    assert _state(typed) is State(typed.lower())


def test_submit_without_gpus_says_so_before_calling_the_service() -> None:
    code, output = cli("submit", "--url", "http://127.0.0.1:9", "--", "true")
    assert code == 1 and "give --gpus N" in output


@pytest.mark.parametrize("count", ["0", "-5"])
def test_logs_bytes_below_one_names_the_flag(count: str) -> None:
    """``dlsched logs ID --bytes 0`` answered the API's words, "422: query.max_bytes: Input
    should be greater than or equal to 1", for a flag the reader knows as --bytes."""
    code, output = cli("logs", "job-000001", "--bytes", count, "--url", "http://127.0.0.1:9")
    assert code == 1 and f"error: --bytes {count}: give at least 1 byte" in output


@pytest.mark.parametrize(("flags", "message"), [
    (["--gpus", "1.5"], "--gpus 1.5: workers are whole"),
    (["--gpus", "0.5", "--gpu-share", "0.4"], "--gpus 0.5 asks for a share of 0.5, --gpu-share"),
], ids=["more-than-one-not-whole", "two-shares-disagree"])
def test_a_fractional_gpus_the_cli_cannot_read_is_one_line(flags: list[str],
                                                           message: str) -> None:
    """``--gpus 0.5`` was typer's "Input should be a valid integer"."""
    code, output = cli("submit", "--url", "http://127.0.0.1:9", *flags, "--", "true")
    assert code == 1 and message in output, output


@pytest.mark.parametrize(("fields", "shown"), [
    ({"gpus": 1, "gpu_share": 0.5}, "0.5"),
    ({"gpus": 2, "gpu_share": 0.3}, "2 x 0.3"),
    ({"gpus": 1, "gpu_share": 3 / 7, "mig_profile": "3g.20gb"}, "MIG 3g.20gb"),
    ({"gpus": 2, "gpu_share": 1.0}, "2"),
    ({"gpus": 1, "gpus_held": 4, "gpu_share": 1.0}, "4 (asked 1)"),
], ids=["half", "two-fractions", "mig", "whole", "resized"])
def test_the_listing_shows_a_share_not_a_whole_gpu(fields: dict, shown: str) -> None:
    """`dlsched jobs` showed "GPUs 1" for a job on half a GPU or on a MIG slice."""
    from dlsched.runtime.display import listed_gpus

    job = SimpleNamespace(**{"gpus_held": None, "mig_profile": None, **fields})
    assert listed_gpus(job) == shown


@pytest.mark.parametrize("token", [[], ["--token", "not-the-token"]], ids=["none", "wrong"])
def test_a_refused_token_names_the_flag(live: Callable[..., Live], token: list[str]) -> None:
    """The CLI answered "401: missing or wrong token (send 'Authorization: Bearer T')": a
    header the reader never typed, not the --token they can give."""
    url = live(token="the-token-0123456789").url
    code, output = cli("jobs", "--url", url, *token)
    assert code == 1
    assert output.strip().endswith("give the service's token with --token-file F, $DLSCHED_TOKEN "
                                   "or --token T")


def test_json_listings_and_events_with_their_times(live: Callable[..., Live], out: Path) -> None:
    url = live().url
    code, job_id = cli("submit", "--url", url, "--gpus", "1", "--name", "[gpu] run", "--",
                       *worker("sleep", out, 30))
    job_id = job_id.strip()
    assert code == 0, job_id
    wait_for(lambda: '"running"' in cli("jobs", job_id, "--json", "--url", url)[1], 15)
    listed = json.loads(cli("jobs", "--json", "--url", url)[1])
    assert [(j["id"], j["status"], j["name"]) for j in listed] == [(job_id, "running",
                                                                    "[gpu] run")]
    detail = json.loads(cli("jobs", job_id, "--json", "--url", url)[1])
    assert [e["kind"] for e in detail["events"]][:2] == ["submitted", "scheduled"]
    status = json.loads(cli("status", "--json", "--url", url)[1])
    assert status["cluster"]["gpus_allocated"] == 1 and status["queues"][0]["running"] == 1
    code, text = cli("jobs", job_id, "--url", url)
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d +started +attempt 1", text), text
    code, text = cli("jobs", "--url", url)
    assert "[gpu] run" in text  # a name is text, not markup


def test_progress_reads_as_words() -> None:
    report = {"time": 100.0, "step": 120, "samples_per_second": 35.25, "world_size": 2,
              "metrics": {"loss": 0.3125, "phase": "warmup"}}
    assert progress_text(report, now=104.0).startswith(
        "step 120, 35.25 samples/s on 2 workers, loss=0.3125, phase=warmup (4 s ago, ")


@pytest.mark.parametrize(("status", "reason", "shown"), [
    ("preempted", "backing off after 1 failed attempt: retries 10 s after the failure",
     "retrying"),
    ("preempted", "waiting for 2 GPUs", "preempted"),
    ("pending", "", "pending"),
])
def test_a_job_waiting_to_retry_reads_retrying(status: str, reason: str, shown: str) -> None:
    assert shown_status(SimpleNamespace(status=status, pending_reason=reason)) == shown


def test_the_backoff_plugins_own_reason_reads_retrying() -> None:
    """The reason as the service stores it: the cycle's status, tagged with its plugin."""
    backoff = RetryBackoff(base=10.0, cap=360.0)
    backoff.failed("job-000001", failures=1, now=0.0)
    job = SimpleNamespace(job_id="job-000001")
    reason = str(backoff.pre_filter(SimpleNamespace(now=1.0), job))  # type: ignore[arg-type]
    assert reason.startswith("[retry-backoff] backing off after 1 failed attempt")
    assert shown_status(SimpleNamespace(status="preempted", pending_reason=reason)) == \
        "retrying"


class _Health(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
        body = b'{"status": "ok", "loop_alive": true}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def test_the_client_waits_for_a_service_that_is_starting() -> None:
    probe = bind("127.0.0.1", 0)  # kept bound (no other process can take the port) but not
    port = probe.getsockname()[1]  # listening: connections are refused until the server starts
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(ClientError, match="cannot reach"):
        Client(url).health()
    servers: list[HTTPServer] = []

    def start_later() -> None:
        time.sleep(0.8)
        server = HTTPServer(("127.0.0.1", port), _Health, bind_and_activate=False)
        server.socket.close()
        server.socket = probe
        server.server_name, server.server_port = "127.0.0.1", port
        server.server_activate()  # listen on the port held since the start
        servers.append(server)
        server.serve_forever()

    threading.Thread(target=start_later, daemon=True).start()
    try:
        with Client(url, connect_wait=20) as client:
            assert client.health()["status"] == "ok"
    finally:
        wait_for(lambda: servers, 5)
        servers[0].shutdown()
        servers[0].server_close()


def test_a_taken_port_is_named() -> None:
    first = bind("127.0.0.1", 0)
    port = first.getsockname()[1]
    try:
        with pytest.raises(ConfigError, match=f"cannot listen on 127.0.0.1:{port}: "
                                              "[Aa]ddress already in use"):
            bind("127.0.0.1", port)
    finally:
        first.close()


def test_a_job_id_that_is_no_path_segment_is_no_job(live: Callable[..., Live]) -> None:
    """An empty id was the list's redirect (a JSONDecodeError traceback) and ``ID/events`` the
    events read as a job (a pydantic traceback): each is "no job", exit 1."""
    url = live().url
    for job_id in ("", "..", "../cluster", "job-000001/events", "job-000001?x=1"):
        for verb in ("jobs", "cancel", "logs"):
            code, output = cli(verb, job_id, "--url", url)
            assert (code, output.strip()) == (1, f"error: 404: no job {job_id!r}"), (verb,
                                                                                       output)


def test_the_job_list_has_every_job_past_one_page(live: Callable[..., Live]) -> None:
    """The API answers a page from the oldest job: one request hid the newest jobs once a
    service had run more than a page (1,000) of them."""
    with Client(live().url) as client:
        ids = [client.submit({"command": ["true"], "gpus": 1}).id for _ in range(5)]
        assert [job.id for job in client.jobs(page=2)] == ids
        assert [job.id for job in client.jobs(page=5)] == ids


def test_gpus_shown_tells_a_resized_job_from_its_request() -> None:
    from types import SimpleNamespace

    from dlsched.runtime.display import gpus_shown

    assert gpus_shown(SimpleNamespace(gpus=1, gpus_held=4)) == "4 (asked 1)"
    assert gpus_shown(SimpleNamespace(gpus=2, gpus_held=2)) == "2"
    assert gpus_shown(SimpleNamespace(gpus=2, gpus_held=None)) == "2"


@pytest.mark.parametrize(("fields", "text"), [
    ({}, "2"),
    ({"gpus_held": 4, "min_gpus": 1, "max_gpus": 4}, "4 (asked 2), elastic 1..4"),
    ({"min_gpus": 1}, "2, elastic 1..2"),
    ({"gpu_share": 0.5, "cpus_per_gpu": 8.0}, "2, per worker: share 0.5, 8 CPUs"),
    ({"mig_profile": "3g.20gb", "gpu_share": 3 / 7}, "2, MIG 3g.20gb"),
], ids=["whole", "resized", "min-only", "shared", "mig"])
def test_a_jobs_detail_shows_what_it_holds_and_asks(fields: dict, text: str) -> None:
    """`dlsched jobs ID` read "GPUs 1" for an elastic job running on 4, and nothing of its
    range, share or CPUs (the listing said "4 (asked 1)")."""
    from rich.console import Console

    from dlsched.runtime.display import print_job

    job = SimpleNamespace(id="job-1", name="", status="running", queue="q", gpus=2,
                          attempts=1, submitted_at=0.0, finished_at=None, command=["true"],
                          queue_position=None, pending_reason="", allocation=[],
                          last_progress=None, gpus_held=None, min_gpus=None, max_gpus=None,
                          gpu_share=1.0, gpu_memory_gb=0.0, mig_profile=None,
                          cpus_per_gpu=0.0, memory_gb_per_gpu=0.0)
    for name, value in fields.items():
        setattr(job, name, value)
    console = Console(record=True, width=200)
    print_job(console, job, [])
    assert f"GPUs {text}  attempts 1" in console.export_text()


def test_job_ids_are_whole_in_an_80_column_listing() -> None:
    """A long pending reason shrank the id column to ``job-0000…`` (three tenant jobs, one
    preempted: what `dlsched jobs` printed to a pipe)."""
    from rich.console import Console

    from dlsched.runtime.cli import jobs_table

    reason = "[tenants] insufficient unused quota and no job may be preempted for it"
    rows = (("v1", "running", "team-vision", ""), ("v2-borrow", "preempted", "vision", reason),
            ("n1", "running", "nlp", ""))
    listed = [SimpleNamespace(id=f"job-{n:06d}", name=name, status=status, queue=queue,
                              gpus=4, gpus_held=None, attempts=1, pending_reason=why)
              for n, (name, status, queue, why) in enumerate(rows, 1)]
    console = Console(record=True, width=80)
    console.print(jobs_table(listed))
    text = console.export_text()
    assert all(f"job-00000{n}" in text for n in (1, 2, 3)) and "preempted" in text, text


def _listing(monkeypatch: pytest.MonkeyPatch, rows: list[SimpleNamespace],
             *args: str) -> tuple[list[tuple[str | None, str | None]], int, str]:
    """``dlsched jobs ARGS`` against a client answering ``rows``: the filters the client was
    asked for, the exit code and the output."""
    asked: list[tuple[str | None, str | None]] = []

    def jobs(_self: Client, status: str | None = None, queue: str | None = None) -> list:
        asked.append((status, queue))
        return [row for row in rows if status in (None, row.status)]

    monkeypatch.setattr(Client, "jobs", jobs)
    return (asked, *cli("jobs", *args, "--url", "http://127.0.0.1:9"))


def _row(job_id: str, status: str, reason: str = "") -> SimpleNamespace:
    return SimpleNamespace(id=job_id, name=None, status=status, queue="default", gpus=1,
                           gpus_held=None, gpu_share=1.0, mig_profile=None, attempts=1,
                           pending_reason=reason)


def test_the_listing_filters_by_the_retrying_it_shows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The listing shows a failed job waiting out its backoff as 'retrying', but
    ``--status retrying`` was refused ("'retrying' is not one of ..."): only ``--status
    preempted`` found it."""
    rows = [_row("job-000001", "preempted", "[retry-backoff] backing off after 1 failed "
                 "attempt: retries 10 s after the failure"),
            _row("job-000002", "preempted", "[tiresias] preempted by job-000003")]
    asked, code, output = _listing(monkeypatch, rows, "--status", "retrying")
    assert (asked, code) == ([("preempted", None)], 0), output
    assert "job-000001" in output and "retrying" in output and "job-000002" not in output


@pytest.mark.parametrize(("args", "said"), [
    ((), "no jobs yet"),
    (("--status", "pending", "--queue", "team-a"), "no jobs match --status pending --queue "
                                                   "team-a"),
], ids=["none", "filtered"])
def test_an_empty_listing_says_so(monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...],
                                  said: str) -> None:
    """An empty listing printed a table of headers only, no word of the filter."""
    _, code, output = _listing(monkeypatch, [], *args)
    assert code == 0 and said in output and "┃" not in output, output


@pytest.mark.parametrize(("status", "reason", "shown"), [
    ("pending", "", "not reached by the last cycle: jobs ahead of it were considered first"),
    ("preempted", "", "not reached by the last cycle: jobs ahead of it were considered first"),
    ("pending", "[placement] needs 4 GPUs, 2 free", "[placement] needs 4 GPUs, 2 free"),
    ("running", "", ""),
    ("finished", "", ""),
    ("cancelled", "cancelled", ""),
    ("failed", "rank 0 exited with code 1", "rank 0 exited with code 1"),
], ids=["pending", "preempted", "own-reason", "running", "finished",
        "cancelled-only-repeats-its-status", "failed-says-why"])
def test_a_waiting_job_without_a_reason_says_the_cycle_did_not_reach_it(
        monkeypatch: pytest.MonkeyPatch, status: str, reason: str, shown: str) -> None:
    """Under Tiresias on 4 GPUs, jobs past the point where the cycle stopped (nothing more could
    start) had an empty reason: `dlsched jobs` and the dashboard showed places 6..76 with no
    "why". Session 30: a cancelled job's "pending reason" read "cancelled" (the core's word)
    beside its status, as if it still waited."""
    from dlsched.runtime.dashboard.routes import environment
    from dlsched.runtime.display import reason_shown

    job = _row("job-000007", status, reason)
    assert reason_shown(job) == shown
    assert environment().filters["why"](job) == shown  # the dashboard's cells and job page
    if status == "pending":
        _, code, output = _listing(monkeypatch, [job])
        assert code == 0 and shown.split()[1].strip(":,") in output, output  # rich wraps it


def test_the_listing_column_is_why_a_job_waits_or_ended() -> None:
    """Session 30: the column was "pending reason" and held a failed job's failure; it is why
    a job waits or why it ended, as the dashboard's column says."""
    from rich.console import Console

    from dlsched.runtime.cli import jobs_table

    console = Console(record=True, width=300)
    console.print(jobs_table([_row("job-000001", "failed", "rank 0 exited with code 1")]))
    header, row = (line.split("│" if "│" in line else "┃")
                   for line in console.export_text().splitlines()[1:4:2])
    assert (header[-2].strip(), row[-2].strip()) == ("why it waits (or ended)",
                                                     "rank 0 exited with code 1")


def test_a_jobs_command_is_shown_as_a_shell_line_that_runs_it() -> None:
    """`dlsched jobs ID` joined the argv by spaces: ``python -c import sys; sys.exit(3)``,
    which a shell reads as three commands; the dashboard's job page likewise."""
    from rich.console import Console

    from dlsched.runtime.display import print_job

    job = SimpleNamespace(id="job-1", name="", status="running", queue="q", gpus=1,
                          attempts=1, submitted_at=0.0, finished_at=None,
                          command=["python", "-c", "import sys; sys.exit(3)"],
                          queue_position=None, pending_reason="", allocation=[],
                          last_progress=None, gpus_held=None, min_gpus=None, max_gpus=None,
                          gpu_share=1.0, gpu_memory_gb=0.0, mig_profile=None,
                          cpus_per_gpu=0.0, memory_gb_per_gpu=0.0)
    console = Console(record=True, width=200)
    print_job(console, job, [])
    assert "command: python -c 'import sys; sys.exit(3)'" in console.export_text()


def test_a_jobs_detail_lists_its_attempts_with_their_outcomes() -> None:
    """`dlsched jobs ID` ("show one, with why it is pending, its attempts and events") showed
    only how many attempts there were: why attempt 1 failed, or how long each ran, was on the
    dashboard's job page alone."""
    from rich.console import Console

    from dlsched.runtime.display import clock, print_job

    attempts = [SimpleNamespace(number=1, started_at=100.0, ended_at=112.5, gpus=[0, 1],
                                outcome="failed", message="rank 0 exited with code 3"),
                SimpleNamespace(number=2, started_at=130.0, ended_at=None, gpus=[2, 3],
                                outcome=None, message="")]
    job = SimpleNamespace(id="job-1", name="", status="running", queue="q", gpus=2,
                          attempts=2, submitted_at=0.0, finished_at=None, command=["true"],
                          queue_position=None, pending_reason="", allocation=[],
                          last_progress=None, gpus_held=None, min_gpus=None, max_gpus=None,
                          gpu_share=1.0, gpu_memory_gb=0.0, mig_profile=None,
                          cpus_per_gpu=0.0, memory_gb_per_gpu=0.0, attempt_history=attempts)
    console = Console(record=True, width=200)
    print_job(console, job, [])
    text = console.export_text()
    assert "attempts (2):" in text
    assert f"  1  {clock(100.0)}  ran 12 s  failed  rank 0 exited with code 3" in text
    assert f"  2  {clock(130.0)}  running" in text
