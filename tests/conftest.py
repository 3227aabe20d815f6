"""Shared test setup: the builders module gets pytest's assertion messages, hypothesis runs a
small, deadline-free profile so the whole suite stays fast, and the large shared data is found
in one place (``shared_data.py``) and skipped, with a reason, where it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from shared_data import SHARED_DATA, WHY

from dlsched.data_location import ENV

pytest.register_assert_rewrite("builders")

settings.register_profile("dlsched", max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dlsched")

if SHARED_DATA is not None:  # the package reads the same data the tests do (Sia's profiles)
    os.environ.setdefault(ENV, str(SHARED_DATA))


@pytest.fixture
def shared_data() -> Path:
    """The shared data directory; the test is skipped when it is absent."""
    if SHARED_DATA is None:
        pytest.skip(WHY)
    return SHARED_DATA


# Markers by place (pyproject.toml registers them): ``-m "not slow"`` is the quick subset.
TESTS = Path(__file__).resolve().parent
RUNTIME = ("runtime/", "job/test_job_examples.py")
SLOW = (*RUNTIME, "sim/test_properties.py", "fuzzing/", "job/test_job_torch.py",
        "tenancy/test_no_loops.py", "scheduling/test_profile_reuse.py",
        "policies/test_elastic_end_to_end.py", "reproduce/")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test under ``RUNTIME`` carries the ``runtime`` marker, under ``SLOW`` the ``slow``
    one, and one that takes ``shared_data`` needs the data: the ``data`` marker."""
    for item in items:
        where = item.path.resolve().relative_to(TESTS).as_posix()
        if where.startswith(RUNTIME):
            item.add_marker(pytest.mark.runtime)
        if where.startswith(SLOW):
            item.add_marker(pytest.mark.slow)
        if "shared_data" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.data)

def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--dashboard-screenshot", default=None, metavar="PNG",
                     help="Also save the browser test's screenshot of the dashboard here "
                          "(docs/img/dashboard.png is made this way).")
