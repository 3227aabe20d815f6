"""``dlsched inference loadgen`` is an HTTP client: it needs the runtime extra's httpx, not
torch (it said "needs the torch extra"), and a service it cannot reach is one line, not
httpx's ConnectError traceback."""

from __future__ import annotations

import socket
import sys
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
