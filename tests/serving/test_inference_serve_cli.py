"""``dlsched inference serve``'s first line (the service itself is not started here)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dlsched.cli import app


@pytest.mark.parametrize(("args", "said"), [
    ([], "serving tiny-lm on http://127.0.0.1:8100 (1 replica)"),
    (["--replicas", "2", "--autoscale-max", "4"],
     "serving tiny-lm on http://127.0.0.1:8100 (2 replicas, autoscaled up to 4)"),
], ids=["one", "autoscaled"])
def test_serve_says_how_many_replicas(monkeypatch: pytest.MonkeyPatch, args: list[str],
                                      said: str) -> None:
    # It said "(1 replicas)", and nothing of --autoscale-max.
    pytest.importorskip("torch", reason="inference serve needs the torch extra")
    pytest.importorskip("fastapi", reason="inference serve needs the runtime extra")
    import dlsched.serving.real.http as http

    monkeypatch.setattr(http, "run", lambda options, host, port: None)  # serve nothing
    result = CliRunner().invoke(app, ["inference", "serve", *args])
    assert result.exit_code == 0, result.output
    assert said in result.output
