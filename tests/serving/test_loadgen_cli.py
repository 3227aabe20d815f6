"""``dlsched inference loadgen`` is an HTTP client: it needs the runtime extra's httpx, not
torch (it said "needs the torch extra"), and a service it cannot reach is one line, not
httpx's ConnectError traceback."""

from __future__ import annotations

import csv
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

pytest.importorskip("httpx", reason="loadgen needs the runtime extra's httpx")

TRACE = ("TIMESTAMP,ContextTokens,GeneratedTokens\n"
         "2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47.9951690,396,109\n")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _loadgen(tmp_path: Path, url: str) -> list[str]:
    trace = tmp_path / "requests.csv"
    trace.write_text(TRACE)
    result = CliRunner().invoke(app, ["inference", "loadgen", "--trace", str(trace), "--url",
                                      url, "--requests", "2", "--out", str(tmp_path / "m.csv")])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return [line for line in result.output.splitlines() if line.strip()]


def test_an_unreachable_service_without_torch_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    url = f"http://127.0.0.1:{_closed_port()}"
    lines = _loadgen(tmp_path, url)
    assert len(lines) == 1 and lines[0].startswith(f"error: --url {url}: "), lines
    assert lines[0].endswith("(is a service such as `dlsched inference serve` listening there?)")
    assert not (tmp_path / "m.csv").exists()


def test_without_httpx_it_names_the_runtime_extra(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    assert _loadgen(tmp_path, "http://127.0.0.1:9") == [
        "error: dlsched inference loadgen needs the runtime extra (no module named 'httpx'): "
        "pip install 'dlsched[runtime]'"]


class _DropsLongRequests(BaseHTTPRequestHandler):
    """Answers requests of few tokens; drops the connection of any asking for more than 10
    (a replica that died midway), sending nothing."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if body["max_tokens"] > 10:
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        now = time.time()
        answer = json.dumps({"first_token": now, "finished": now, "replica": 0,
                             "preemptions": 0}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def dropping_service() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _DropsLongRequests)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_connection_dropped_midway_keeps_what_was_measured(tmp_path: Path,
                                                              dropping_service: str) -> None:
    # The second request (109 output tokens, 14 once scaled by 1/8) gets no answer: the
    # first one's times were thrown away with httpx's error, and nothing was written.
    trace = tmp_path / "requests.csv"
    trace.write_text(TRACE)
    out = tmp_path / "m.csv"
    result = CliRunner().invoke(app, ["inference", "loadgen", "--trace", str(trace), "--url",
                                      dropping_service, "--requests", "2", "--rate", "10",
                                      "--out", str(out)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    said = " ".join(result.output.split())
    assert "warning: 1 of 2 requests lost (no answer: " in said
    assert f"{out} keeps every request, the lost ones with status 0" in said
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert [(row["request"], row["status"]) for row in rows] == [("0", "200"), ("1", "0")]
    assert rows[1]["received"] == "nan" and float(rows[0]["received"]) > 0
    metrics = json.loads(result.stdout[:result.stdout.rindex("}") + 1])
    assert (metrics["requests"], metrics["completed"], metrics["lost"]) == (2, 1, 1)


@pytest.mark.parametrize(("url", "said"), [
    ("http://[::1", "not a URL: Invalid port: ':1'"),
    ("localhost:8100", "expected http://HOST:PORT (or https://)"),
    ("ftp://example.org", "expected http://HOST:PORT (or https://)"),
], ids=["unclosed-bracket", "no-scheme", "ftp"])
def test_a_url_that_is_no_http_url_is_one_line(tmp_path: Path, url: str, said: str) -> None:
    # "http://[::1" ended in httpx's InvalidURL traceback; "localhost:8100" was sent as a
    # request and reported as "unsupported protocol 'localhost://' (is a service ...
    # listening there?)".
    assert _loadgen(tmp_path, url) == [f"error: --url {url}: {said}"]

