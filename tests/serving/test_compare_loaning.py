"""``benchmarks/compare_loaning.py`` finds its trace wherever the checkout lives: it looked
only in the checkout's sibling ``../shared/data`` and ended in a traceback elsewhere
("no such request trace file") though docs/inference.md names it."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from dlsched.data_location import set_data_dir

ROOT = Path(__file__).resolve().parents[2]


def _benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "compare_loaning", ROOT / "benchmarks" / "compare_loaning.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    set_data_dir(tmp_path)
    try:
        yield tmp_path
    finally:
        set_data_dir(None)


def test_the_trace_comes_from_the_data_directory(data_dir: Path) -> None:
    module = _benchmark()
    trace = data_dir / module.CONV
    trace.parent.mkdir(parents=True)
    trace.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,10,3\n")
    assert module.default_trace() == trace


def test_without_the_data_directory_a_trace_that_exists_is_used(data_dir: Path) -> None:
    trace = _benchmark().default_trace()  # the workstation's shared/data, or the example's
    assert trace.is_file() and trace.name.endswith(".csv")
