"""`dlsched simulate` says when training jobs are left unfinished by a run that ran out of
events (a job placed where it makes no progress runs for ever), and says nothing of services,
which run until their end on purpose, nor of runs that finish every job."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.experiment import unfinished_training
from dlsched.policies import colocate
from dlsched.scheduling.timeline import Timeline
from dlsched.sim.result import JobRecord, RunInfo, SimulationResult
from dlsched.workload.job import JobKind, JobSpec, WorkUnit
from dlsched.workload.trace import Trace

ARGS = ["simulate", "--trace", "gavel-continuous-1000", "--limit", "100", "--cluster",
        "gavel-108", "--policy", "pack-aware", "--throughput", "gavel-physical"]


def _simulate(tmp_path: Path) -> str:
    result = CliRunner().invoke(app, [*ARGS, "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())


def test_jobs_left_running_for_ever_are_told(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # pack-aware as it was before it kept to the runnable filter: ResNet-50 b128 on K80
    monkeypatch.setattr(colocate, "allowed_nodes",
                        lambda state, job: np.ones(state.cluster.num_nodes, dtype=bool))
    out = _simulate(tmp_path)
    assert "98/100 finished" in out
    assert ("warning: pack-aware: 2 training jobs never finished: the run ran out of events "
            "with them still running or waiting (continuous-1000-4, continuous-1000-22)") in out


def test_a_run_that_finishes_every_job_warns_nothing(tmp_path: Path) -> None:
    out = _simulate(tmp_path)
    assert "100/100 finished" in out and "warning" not in out


def _record(job_id: str, status: str) -> JobRecord:
    finish = 10.0 if status == "finished" else None
    return JobRecord(job_id, "default", 1, 0.0, 0.0, finish, status, 0, 0.0, 0.0, 1.0, "")


def _result(stalled_at: float | None) -> SimulationResult:
    records = (_record("train", "running"), _record("serve", "running"),
               _record("done", "finished"), _record("queued", "pending"))
    return SimulationResult(RunInfo("p", "t", "c", 0, "0"), records,
                            Timeline([], [], [], []), 4, cycles=0, cycle_seconds=0.0,
                            wall_seconds=0.0, end_time=10.0, stalled_at=stalled_at)


def test_services_and_stalled_runs_are_not_listed() -> None:
    specs = tuple(JobSpec(name, 0.0, 1, 100.0, WorkUnit.REFERENCE_SECONDS, kind=kind)
                  for name, kind in (("train", JobKind.TRAINING), ("serve", JobKind.SERVICE),
                                     ("done", JobKind.TRAINING), ("queued", JobKind.TRAINING)))
    trace = Trace("t", specs)
    assert unfinished_training(_result(None), trace) == ("train", "queued")
    assert unfinished_training(_result(5.0), trace) == ()  # the stall has its own warning
