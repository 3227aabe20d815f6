"""``benchmarks/bench_serving.py`` takes the options its docstring names: ``--chunk N`` was
documented but refused ("unrecognized arguments")."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "services" / "azure-conv-5min.csv"


def _bench():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_serving",
                                                  ROOT / "benchmarks" / "bench_serving.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_chunked_prefill_is_an_option(capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    bench.main(["--trace", str(EXAMPLE), "--replicas", "2"])
    first = capsys.readouterr().out
    bench.main(["--trace", str(EXAMPLE), "--replicas", "2", "--chunk", "512"])
    chunked = capsys.readouterr().out
    assert "prefill first" in first and "chunked prefill, 512 tokens" in chunked
    row = [line for line in chunked.splitlines() if line.startswith("| 2 |")]
    assert len(row) == 1 and row[0] != [r for r in first.splitlines() if r.startswith("| 2 |")][0]


def test_a_chunk_below_one_is_refused() -> None:
    with pytest.raises(SystemExit):
        _bench().main(["--trace", str(EXAMPLE), "--chunk", "0"])
