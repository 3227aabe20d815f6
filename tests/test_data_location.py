"""One resolver for data: the explicit setting, then $DLSCHED_DATA, then the bundled data."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dlsched.data_location import (
    ENV,
    DataNotFound,
    bundled_dir,
    data_dir,
    find_data,
    require_data,
    set_data_dir,
)


@pytest.fixture
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    set_data_dir(None)
    yield tmp_path
    set_data_dir(None)


def test_the_bundled_data_is_found_without_any_setting(clean: Path) -> None:
    assert data_dir() is None
    assert find_data("traces/pollux") == bundled_dir() / "traces/pollux"
    assert find_data("profiles/sia") is None


def test_the_setting_comes_before_the_variable_and_both_before_the_bundle(
        clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("env", "set"):
        (clean / name / "traces/pollux").mkdir(parents=True)
    monkeypatch.setenv(ENV, str(clean / "env"))
    assert find_data("traces/pollux") == clean / "env/traces/pollux"
    set_data_dir(clean / "set")
    assert find_data("traces/pollux") == clean / "set/traces/pollux"
    assert find_data("traces/chronus") == bundled_dir() / "traces/chronus"


def test_missing_data_names_what_needs_it_and_where_it_looked(
        clean: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DataNotFound, match=rf"the model needs profiles/x, .*\${ENV} is not set"):
        require_data("profiles/x", "the model")
    monkeypatch.setenv(ENV, str(clean / "absent"))
    with pytest.raises(DataNotFound, match=rf"\${ENV}: .*absent is not a directory"):
        find_data("profiles/x")
