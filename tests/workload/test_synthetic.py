"""Synthetic generator: seeded, Poisson arrivals, job shapes resampled jointly."""

from __future__ import annotations

import numpy as np
import pytest

from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.synthetic import generate
from dlsched.workload.trace import Trace

SOURCE = Trace("src", (
    JobSpec("a", 0.0, 1, 100.0, queue="q1"),
    JobSpec("b", 5.0, 8, 9000.0, queue="q2", model="bert", batch_size=32),
    JobSpec("c", 9.0, 2, 50.0, deadline=109.0),
), source="src.csv", throughput="linear")


def test_same_seed_same_trace_other_seed_differs() -> None:
    first = generate(50, 30.0, seed=7, fit_from=SOURCE)
    assert first == generate(50, 30.0, seed=7, fit_from=SOURCE)
    assert first.jobs != generate(50, 30.0, seed=8, fit_from=SOURCE).jobs


def test_pairs_come_from_one_source_job() -> None:
    shapes = {(j.num_gpus, j.work, j.model, j.queue) for j in SOURCE.jobs}
    trace = generate(200, 10.0, seed=1, fit_from=SOURCE)
    assert {(j.num_gpus, j.work, j.model, j.queue) for j in trace.jobs} == shapes


def test_deadline_keeps_its_slack() -> None:
    trace = generate(100, 10.0, seed=3, fit_from=SOURCE)
    slack = [j.deadline - j.submit_time for j in trace.jobs if j.deadline is not None]
    assert slack and slack == pytest.approx([100.0] * len(slack))


def test_arrivals_are_poisson_at_the_rate() -> None:
    trace = generate(4000, 60.0, seed=11, fit_from=SOURCE)  # one a minute
    times = np.array([j.submit_time for j in trace.jobs])
    gaps = np.diff(times)
    assert times[0] == 0 and (gaps >= 0).all()
    assert gaps.mean() == pytest.approx(60.0, rel=0.05)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.06)  # exponential: CV 1


def test_trace_metadata_and_ids() -> None:
    trace = generate(12, 5.0, seed=0, fit_from=SOURCE)
    assert trace.jobs[0].job_id == "synthetic-00" and len({j.job_id for j in trace.jobs}) == 12
    assert (trace.format, trace.throughput, trace.name) == ("synthetic", "linear",
                                                            "synthetic-src-seed0")
    assert all(j.work_unit is WorkUnit.REFERENCE_SECONDS for j in trace.jobs)


@pytest.mark.parametrize("n_jobs, rate, source", [
    pytest.param(-1, 1.0, SOURCE, id="negative-count"),
    pytest.param(5, 0.0, SOURCE, id="zero-rate"),
    pytest.param(5, 1.0, Trace("empty", ()), id="empty-source"),
])
def test_bad_arguments(n_jobs: int, rate: float, source: Trace) -> None:
    with pytest.raises(ValueError):
        generate(n_jobs, rate, seed=0, fit_from=source)


def test_zero_jobs_is_an_empty_trace() -> None:
    assert len(generate(0, 1.0, seed=0, fit_from=SOURCE)) == 0
