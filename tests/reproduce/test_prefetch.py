"""``dlsched reproduce --workers``: a pooled experiment's simulations on processes
(reproduce/prefetch.py) give the rows and run folders of one serial pass, also when the
experiment reads its results as it goes."""

from __future__ import annotations

import dataclasses
import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched import compare_pool
from dlsched.cli import app
from dlsched.reproduce import registry, simulate
from dlsched.reproduce.prefetch import stand_in
from dlsched.reproduce.registry import ExperimentOptions, get_experiment, register_experiment
from dlsched.reproduce.rows import Measured
from dlsched.reproduce.runner import run_experiment
from dlsched.reproduce.simulate import run_setting

forks = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                           reason="workers see this test's patches only when forked")
runner = CliRunner()


def test_a_real_experiment_gives_the_same_rows_and_run_folders(tmp_path: Path) -> None:
    experiment = get_experiment("tiresias-nsdi19")
    rows = {}
    for workers in (1, 2):
        options = ExperimentOptions(("philly-tiresias-2000",), (), out=tmp_path / str(workers),
                                    options={"policies": "fifo,srtf,tiresias", "limit": "300"})
        rows[workers] = run_experiment(experiment, options, workers)
    assert rows[1] == rows[2] and len(rows[1]) == 6
    for policy in ("fifo", "srtf", "tiresias"):
        runs = [tmp_path / str(w) / "runs" / "philly-tiresias-2000" / policy for w in (1, 2)]
        assert (runs[0] / "jobs.csv").read_bytes() == (runs[1] / "jobs.csv").read_bytes()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """``run_setting``'s simulations replaced by a cheap stand-in: a summary whose mean JCT
    is the policy name's length times the case's number; the runs made in this process."""
    made: list[tuple[str, str]] = []

    def fake(setting: str, policy: str, trace: str, options: ExperimentOptions, case: str,
             overrides: dict[str, object]) -> object:
        made.append((case, policy))
        return dataclasses.replace(stand_in(policy, trace),
                                   jct_mean=float(len(policy) * int(case)))

    monkeypatch.setattr(simulate, "_run", fake)  # forked workers see it too
    monkeypatch.setattr(compare_pool, "pool_context",  # forked even beside other threads
                        lambda: multiprocessing.get_context("fork"))
    return made


@pytest.fixture
def adaptive() -> Iterator[str]:
    """An experiment that picks its next run by the last result, and reads each result as a
    number (a stand-in's None would raise)."""

    @register_experiment("adaptive-test", "a toy", cases=("1", "2", "3"), pooled=True)
    def run(options: ExperimentOptions) -> Iterator[Measured]:
        for case in options.cases:
            first = run_setting("toy", "fifo", "t", options, case).jct_mean
            yield Measured(case, "fifo", "jct_mean_s", first * 1.0)  # type: ignore[operator]
            if first > 4:  # type: ignore[operator]
                second = run_setting("toy", "tiresias", "t", options, case).jct_mean
                yield Measured(case, "tiresias", "jct_mean_s", second)

    yield "adaptive-test"
    registry._EXPERIMENTS.pop("adaptive-test")


@forks
def test_runs_the_first_pass_missed_are_run_and_the_rows_are_the_serial_ones(
        counted: list[tuple[str, str]], adaptive: str) -> None:
    experiment = get_experiment(adaptive)
    options = ExperimentOptions(("1", "2", "3"), ())
    serial = run_experiment(experiment, options, 1)
    counted.clear()
    pooled = run_experiment(experiment, options, 2)
    assert pooled == serial
    assert [(r.case, r.policy, r.dlsched) for r in serial] == [
        ("1", "fifo", 4.0), ("2", "fifo", 8.0), ("2", "tiresias", 16.0), ("3", "fifo", 12.0),
        ("3", "tiresias", 24.0)]
    # The first pass stopped at its first stand-in: case 1's run went to the pool alone
    # (one run: no pool), so every run was made here, in the second pass, once each.
    assert sorted(counted) == sorted((r.case, r.policy) for r in serial)


@pytest.fixture
def plain() -> Iterator[str]:
    """An experiment whose runs do not depend on its results (as the real ones)."""

    @register_experiment("plain-test", "a toy", cases=("1", "2", "3"), pooled=True)
    def run(options: ExperimentOptions) -> Iterator[Measured]:
        for case in options.cases:
            for policy in ("fifo", "srtf"):
                summary = run_setting("toy", policy, "t", options, case)
                yield Measured(case, policy, "jct_mean_s", summary.jct_mean)

    yield "plain-test"
    registry._EXPERIMENTS.pop("plain-test")


@forks
def test_recorded_runs_go_to_the_pool_not_to_this_process(counted: list[tuple[str, str]],
                                                          plain: str) -> None:
    experiment = get_experiment(plain)
    options = ExperimentOptions(("1", "2", "3"), ())
    serial = run_experiment(experiment, options, 1)
    assert len(counted) == 6
    counted.clear()
    assert run_experiment(experiment, options, 2) == serial
    assert counted == []  # all six ran on the workers


def test_an_experiment_not_pooled_runs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    passes: list[int] = []

    @register_experiment("once-test", "a toy", cases=("a",))
    def run(options: ExperimentOptions) -> Iterator[Measured]:
        passes.append(1)
        yield Measured("a", "fifo", "jct_mean_s", 1.0)

    try:
        rows = run_experiment(get_experiment("once-test"), ExperimentOptions(("a",), ()), 4)
    finally:
        registry._EXPERIMENTS.pop("once-test")
    assert len(rows) == 1 and passes == [1]


def test_cli_takes_workers(tmp_path: Path) -> None:
    result = runner.invoke(app, ["reproduce", "tiresias-nsdi19", "--out", str(tmp_path),
                                 "--opt", "policies=fifo,srtf", "--opt", "limit=200",
                                 "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "philly-tiresias-2000 fifo: mean JCT" in result.output
    assert (tmp_path / "reproduce.csv").read_text().count("\n") == 5  # header + 4 cells
