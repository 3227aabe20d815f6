"""Assertions shared by the trace-reader tests (imported by name: pytest puts this folder on
``sys.path``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from dlsched.errors import InputError
from dlsched.workload.readers import ReaderOptions, read_trace
from dlsched.workload.trace import Trace

Writer = Callable[[str, str], Path]  # the ``write`` fixture


def expect_error(path: Path, fmt: str | None, line: int, field: str | None,
                 options: ReaderOptions | None = None) -> InputError:
    """Reading fails with an ``InputError`` located at ``path:line:field``."""
    with pytest.raises(InputError) as caught:
        read_trace(path, fmt, options)
    where = f"{path}:{line}" + (f":{field}" if field else "")
    assert where in str(caught.value)
    return caught.value


def skip_counts(path: Path, fmt: str | None, good_rows: int,
                options: ReaderOptions | None = None) -> Trace:
    """With ``skip_invalid`` the bad row is one counted warning and the good rows stay."""
    base = options or ReaderOptions()
    trace = read_trace(path, fmt, dataclasses.replace(base, skip_invalid=True))
    assert trace.skipped == 1
    assert len(trace) == good_rows
    assert str(path) in trace.warnings[0]
    return trace


def bad_third_line(path: Path, fmt: str | None, field: str | None,
                   options: ReaderOptions | None = None) -> None:
    """A file of a header, one good row and a bad one: reading fails at ``path:3:field``, and
    with ``skip_invalid`` the bad row is one counted warning beside the good one."""
    expect_error(path, fmt, 3, field, options)
    skip_counts(path, fmt, 1, options)
