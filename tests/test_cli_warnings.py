"""A ``DataWarning`` (data missing, a bundled fallback used; e.g. ``--policy sia`` without Sia's
profiles) and a ``SolverWallClockWarning`` (a MILP stopped by its wall-clock safety net) are
one ``warning:`` line each on the command line, not Python's "FILE:LINE: DataWarning:"
followed by a line of dlsched's source."""

from __future__ import annotations

import warnings

import pytest

from dlsched.cli import _App
from dlsched.data_location import DataWarning
from dlsched.policies.elastic.mip_budget import SolverWallClockWarning
from dlsched.scheduling.resilience import CrawlWarning


def _probe(category: type[Warning]) -> _App:
    probe = _App()

    @probe.command()
    def warns() -> None:
        warnings.warn(category("profiles not found: the bundled fit is used"), stacklevel=1)

    @probe.command()
    def other() -> None:  # a second command, so that Typer keeps subcommands
        pass

    return probe


@pytest.mark.parametrize("category", [DataWarning, SolverWallClockWarning, CrawlWarning],
                         ids=["data", "solver-wall-clock", "crawl"])
def test_a_data_warning_is_one_line(category: type[Warning],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _probe(category)(["warns"])
    assert exit_info.value.code == 0
    err = capsys.readouterr().err
    assert [line for line in err.splitlines() if line.strip()] == [
        "warning: profiles not found: the bundled fit is used"]


def test_other_warnings_go_on_as_before() -> None:
    with pytest.warns(RuntimeWarning, match="profiles not found"), pytest.raises(SystemExit):
        _probe(RuntimeWarning)(["warns"])
    assert warnings.showwarning.__module__ != "dlsched.cli"  # restored after the command
