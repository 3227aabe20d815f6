"""Requests generated from ServeGen per-client rates: deterministic windows, seeds, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from serving_helpers import trace

from dlsched.errors import InputError
from dlsched.serving.servegen import generate, looks_like_servegen

LENGTHS = trace([0.0, 1.0], [100, 200], [5, 7])


def _client(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(rows) + "\n")
    return path


def test_constant_rate_window_by_hand(tmp_path: Path) -> None:
    """cv 0: exactly ``rate`` requests a second; a zero-rate window adds none."""
    f = _client(tmp_path / "c.csv", ["0,2.0,0,,0,0", "600,0,0,,0,0"])
    assert looks_like_servegen(f) and looks_like_servegen(tmp_path)
    tr = generate(f, LENGTHS, seed=1, duration=10.0)
    assert tr.arrival.tolist() == pytest.approx(np.arange(20) * 0.5)
    assert set(tr.prompt.tolist()) <= {100, 200}
    assert len(generate(f, LENGTHS, duration=10.0, rate_scale=0.5)) == 10


def test_bursty_windows_follow_the_seed_and_the_rate(tmp_path: Path) -> None:
    _client(tmp_path / "a.csv", ["0,5.0,3.0,Weibull,0.5,1.1"])
    _client(tmp_path / "b.csv", ["0,1.0,1.0,Gamma,1.0,1.0"])
    one, again = (generate(tmp_path, LENGTHS, seed=3, duration=600) for _ in range(2))
    other = generate(tmp_path, LENGTHS, seed=4, duration=600)
    assert np.array_equal(one.arrival, again.arrival)
    assert not np.array_equal(one.arrival, other.arrival)
    assert 2000 < len(one) < 5000  # about 6 req/s over 600 s; cv 3 makes it noisy


def test_malformed_rate_names_file_line_field(tmp_path: Path) -> None:
    f = _client(tmp_path / "c.csv", ["0,2.0,0,,0,0", "600,fast,0,,0,0"])
    with pytest.raises(InputError, match=r"c.csv:2:rate: not a number: 'fast'"):
        generate(f, LENGTHS, duration=1200)
