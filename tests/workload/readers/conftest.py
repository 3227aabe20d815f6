"""Fixtures shared by the trace-reader tests: the real data and a file writer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).parents[3] / "../shared/data"


@pytest.fixture
def shared_data() -> Path:
    return SHARED_DATA


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write ``text`` to ``tmp_path/name`` and return the path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return _write
