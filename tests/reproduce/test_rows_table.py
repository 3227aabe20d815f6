"""What ``dlsched reproduce`` prints: its cells' numbers whole at 80 columns."""

from __future__ import annotations

import pytest

from dlsched.reproduce.cli import _print_rows
from dlsched.reproduce.rows import ReproduceRow


def test_numbers_are_never_cut_at_80_columns(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``reproduce llama3-405b`` at 80 columns printed "0.92…", "229,…" and "+0.…"."""
    monkeypatch.setenv("COLUMNS", "80")
    rows = [ReproduceRow("llama3-405b", "young-x0.25", "restart",
                         "lost_gpu_hours_host-maintenance", 108123.456, None),
            ReproduceRow("llama3-405b", "young", "restart", "ettr", 0.925123, 0.9)]
    _print_rows("llama3-405b", rows)
    printed = capsys.readouterr().out
    assert max(map(len, printed.splitlines())) <= 80
    for whole in ("108,123", "0.925123", "0.9", "+2.8%"):
        assert whole in printed, printed
    assert "…" not in printed
