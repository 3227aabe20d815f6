"""Bundled samples: every name resolves through importlib.resources; paths still work."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.errors import InputError
from dlsched.workload.bundled import BUNDLED_TRACES, resolve_trace
from dlsched.workload.readers import ReaderOptions, detect_format

EXPECTED_JOBS = {"philly-sample": 2000, "philly-tiresias-2000": 2000, "elasticflow-195": 195,
                 "gavel-max-min-fairness": 96, "gavel-continuous-1000": 1000,
                 "chronus-mix2-4h": 1715, **{f"pollux-{n}": 160 for n in range(1, 9)},
                 **{f"pollux-{n}-load-{load}": round(160 * float(load)) for n in range(1, 9)
                    for load in ("0.5", "1.5", "2.0")}}
LICENSED = ("philly/LICENSE-CC-BY-4.0.txt", "pollux/LICENSE-APACHE-2.0.txt",
            "elasticflow/LICENSE", "gavel/LICENSE", "chronus/LICENSE")


@pytest.mark.parametrize("name", sorted(BUNDLED_TRACES))
def test_every_bundled_trace_reads_in_its_format(name: str) -> None:
    bundled = BUNDLED_TRACES[name]
    trace = resolve_trace(name)
    assert len(trace) == EXPECTED_JOBS[name] and trace.skipped == 0
    assert trace.format == bundled.format == detect_format(bundled.file())
    assert trace.jobs[0].submit_time == 0


def test_names_cover_the_expected_set() -> None:
    assert set(BUNDLED_TRACES) == set(EXPECTED_JOBS)


def test_licenses_and_readme_sit_beside_the_data() -> None:
    root = BUNDLED_TRACES["philly-sample"].file().parents[1]
    assert (root / "README.md").is_file()
    for relative in LICENSED:
        assert (root / relative).is_file(), relative
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    # The samples stay small; gavel-continuous-1000 (140 kB, the gavel-osdi20 input) is the
    # largest single addition since the first bundle.
    assert total < 750_000


def test_a_path_resolves_like_read_trace(shared_data: Path) -> None:
    trace = resolve_trace(str(shared_data / "traces/philly/philly.csv"), None,
                          ReaderOptions(limit=5))
    assert trace.format == "philly" and len(trace) == 5


@pytest.mark.parametrize("name, fmt", [
    pytest.param("no-such-trace", None, id="unknown-name"),
    pytest.param("pollux-1", "philly", id="wrong-format"),
])
def test_bad_names_fail_clearly(name: str, fmt: str | None) -> None:
    with pytest.raises(InputError):
        resolve_trace(name, fmt)


def test_options_reach_the_reader() -> None:
    trace = resolve_trace("pollux-2", options=ReaderOptions(limit=10))
    assert len(trace) == 10
