"""Shared test setup: the builders module gets pytest's assertion messages, and hypothesis runs a
small, deadline-free profile so the whole suite stays fast."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

pytest.register_assert_rewrite("builders")

settings.register_profile("dlsched", max_examples=50, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dlsched")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--dashboard-screenshot", default=None, metavar="PNG",
                     help="Also save the browser test's screenshot of the dashboard here "
                          "(docs/img/dashboard.png is made this way).")
