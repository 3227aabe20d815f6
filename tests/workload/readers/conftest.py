"""Fixtures shared by the trace-reader tests: a file writer (the real data comes from the
``shared_data`` fixture in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write ``text`` to ``tmp_path/name`` and return the path."""

    def _write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return _write
