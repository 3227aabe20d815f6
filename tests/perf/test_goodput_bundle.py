"""Where the goodput model finds Sia's (unbundled) profiles: the data directory, never the
working directory or the checkout's neighbours; a clear warning when they are absent (issue 11
item 1: a clone without ../shared silently got 0 fitted sets instead of 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.data_location import ENV, DataNotFound, DataWarning
from dlsched.errors import ConfigError
from dlsched.perf.goodput.bundle import SIA_ENV, sia_perf_params, sia_profiles_dir
from dlsched.scheduling.registry import build_policy


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No data directory, run from an empty directory."""
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.delenv(SIA_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_without_sia_profiles_the_fallback_is_announced(nowhere: Path) -> None:
    assert sia_profiles_dir() is None
    with pytest.warns(DataWarning, match=f"Sia's per-GPU-type profiles not found.*Set {ENV}"):
        assert sia_perf_params() == {}


def test_the_data_directory_holds_them_wherever_the_run_starts(
        nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (nowhere / "data/profiles/sia").mkdir(parents=True)
    monkeypatch.setenv(ENV, str(nowhere / "data"))
    monkeypatch.chdir(nowhere / "data/profiles")
    assert sia_profiles_dir() == (nowhere / "data/profiles/sia").resolve()


def test_a_named_directory_that_is_missing_is_an_error(nowhere: Path) -> None:
    with pytest.raises(DataNotFound, match="is not a directory"):
        sia_perf_params(nowhere / "no-such-dir")
    with pytest.raises(ConfigError, match="policy sia: profiles: .*no-such-dir is not a dir"):
        build_policy("sia", {"profiles": str(nowhere / "no-such-dir")})


@pytest.mark.data
def test_with_the_shared_data_every_sia_fit_is_found(shared_data: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, str(shared_data))
    monkeypatch.delenv(SIA_ENV, raising=False)
    assert len(sia_perf_params()) == 30
