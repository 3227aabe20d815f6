"""The large shared data the tests read when it is there (traces and profiles too big, or not
licensed, to bundle): ``$DLSCHED_DATA``, else ``shared/data`` beside the checkout (the
developers' layout: ``../shared/data`` from the repository root). The one place tests spell it.

A test that needs it takes the ``shared_data`` fixture (tests/conftest.py) or calls
``shared(relative)``: both skip the test, saying what is missing, when it is absent, and such
tests carry the ``data`` marker (``-m "not data"`` leaves them out).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dlsched.data_location import ENV

REPOSITORY = Path(__file__).resolve().parents[1]
BESIDE = REPOSITORY.parent / "shared" / "data"


def _locate() -> Path | None:
    chosen = Path(os.environ[ENV]) if os.environ.get(ENV) else BESIDE
    return chosen.resolve() if chosen.is_dir() else None


SHARED_DATA = _locate()
WHY = (f"needs the shared data (set {ENV}, or put it at {BESIDE})" if SHARED_DATA is None
       else "")

needs_shared_data = pytest.mark.skipif(SHARED_DATA is None, reason=WHY or "unused")


def shared(relative: str) -> Path:
    """``relative`` under the shared data, or skip the calling test saying what is missing."""
    if SHARED_DATA is None:
        pytest.skip(f"{WHY}: {relative}")
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"needs {relative} in the shared data at {SHARED_DATA}")
    return path
