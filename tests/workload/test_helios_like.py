"""The synthetic Helios-sized generator (issue 14): seeded, fitted to the summary row it reads,
offering the load it is asked for, and read lazily as ``JobSpec``s in submission order."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from dlsched.errors import InputError
from dlsched.workload.helios_like import fit_summary, generate, generation_problem

SUMMARY = ("id,gpu_num,job_num,avg_run_time_gpu,med_run_time_gpu,avg_gpu_num\n"
           "total,6220,3362981,6651.681,206.0,3.716\n")


@pytest.fixture
def fit(tmp_path: Path):
    path = tmp_path / "helios_cluster_summary.csv"
    path.write_text(SUMMARY)
    return fit_summary(path)


def test_fit_matches_the_summary_row(fit) -> None:
    assert math.exp(fit.log_mu) == pytest.approx(206.0)
    assert math.exp(fit.log_mu + fit.log_sigma**2 / 2) == pytest.approx(6651.681)
    assert fit.mean_gpus == pytest.approx(3.716)
    assert sum(fit.gpu_probs) == pytest.approx(1.0)


def test_unknown_row_is_named(tmp_path: Path) -> None:
    path = tmp_path / "s.csv"
    path.write_text(SUMMARY)
    with pytest.raises(InputError, match="no row with id 'Venus' \\(rows: total\\)"):
        fit_summary(path, "Venus")


HEADER = SUMMARY.splitlines()[0]


# Before: KeyError 'avg_gpu_num', "could not convert string to float: 'abc'", a bare
# "mean GPU count 100.0 outside 1..64" and "no row with id 'total' (rows: )", none naming the
# file's line or column; bench_scale.py printed each as a traceback from every policy's process.
@pytest.mark.parametrize(("text", "where", "told"), [
    ("", ":1:", "empty file (expected a header: id,avg_run_time_gpu,"),
    (HEADER + "\n", ":2:", "no rows (the file has at most a header)"),
    ("id,gpu_num,job_num,avg_run_time_gpu,med_run_time_gpu\ntotal,1,1,6651.681,206.0\n",
     ":1:avg_gpu_num:", "missing column"),
    (HEADER + "\ntotal,6220,3362981,abc,206.0,3.716\n", ":2:avg_run_time_gpu:",
     "not a number: 'abc'"),
    (HEADER + "\nVenus,1,1,6651.681,206.0\n", ":2:avg_gpu_num:", "missing: the row has 5 "
     "fields, the header 6"),
    (HEADER + "\ntotal,6220,3362981,6651.681,206.0,1e300\n", ":2:avg_gpu_num:",
     "out of range: 1e300"),
    (HEADER + "\ntotal,6220,3362981,6651.681,206.0,100\n", ":2:avg_gpu_num:",
     "mean GPU count 100 outside 1..64"),
    (HEADER + "\ntotal,6220,3362981,100,206.0,3.716\n", ":2:avg_run_time_gpu:",
     "100 must exceed med_run_time_gpu 206"),
    (HEADER + "\ntotal,6220,3362981,6651.681,0,3.716\n", ":2:med_run_time_gpu:",
     "must be > 0, got 0"),
], ids=["empty", "header-only", "missing-column", "bad-number", "short-row", "huge-number",
        "gpus-out-of-range", "mean-below-median", "zero-median"])
def test_a_bad_summary_is_named_at_its_line_and_column(tmp_path: Path, text: str, where: str,
                                                        told: str) -> None:
    path = tmp_path / "summary.csv"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        fit_summary(path)
    assert f"{path}{where} {told}" in str(caught.value)


@pytest.mark.parametrize(("args", "told"), [
    ((0, 6416, 0.75), "n_jobs must be 1..100,000,000, got 0"),
    ((10, 0, 0.75), "gpus must be >= 1, got 0"),
    ((10, 6416, 0.0), "load must be in (0, 10], got 0.0"),
], ids=["no-jobs", "no-gpus", "no-load"])
def test_generation_sizes_are_named(fit, args: tuple, told: str) -> None:
    assert generation_problem(*args) == told
    with pytest.raises(ValueError, match=re.escape(told)):
        generate(*args, 0, fit)


def test_same_seed_same_trace_and_offered_load(fit) -> None:
    a, b = generate(20_000, 6416, 0.75, 3, fit), generate(20_000, 6416, 0.75, 3, fit)
    assert [a.jobs[i] for i in (0, 1, 19_999)] == [b.jobs[i] for i in (0, 1, 19_999)]
    assert generate(20_000, 6416, 0.75, 4, fit).jobs[5] != a.jobs[5]
    submits = np.array([job.submit_time for job in a.jobs])
    assert (np.diff(submits) >= 0).all() and submits[0] == 0.0
    assert len({job.job_id for job in a.jobs}) == len(a) == 20_000
    # offered load: GPU-seconds asked per GPU-second over the arrivals (heavy tail: loose)
    offered = a.jobs.gpu_seconds / (6416 * submits[-1])
    assert 0.5 < offered < 1.0
    assert np.median([job.work for job in a.jobs]) == pytest.approx(206.0, rel=0.1)


def test_simulator_reads_the_columns_lazily(fit) -> None:
    from builders import make_cluster

    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator

    trace = generate(300, 64, 0.8, 0, fit)
    result = Simulator(make_cluster(nodes=8, gpus=8), trace, build_policy("fifo"),
                       SimConfig(max_time=trace.jobs[299].submit_time)).run()
    assert len(result.jobs) == 300
    assert {r.job_id for r in result.jobs} == {job.job_id for job in trace.jobs}


def test_bench_scale_names_a_bad_argument_in_one_line(tmp_path: Path) -> None:
    """benchmarks/bench_scale.py checks its sizes and summary before it starts a process per
    policy (each printed a traceback before)."""
    import importlib.util

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_scale.py"
    spec = importlib.util.spec_from_file_location("bench_scale", script)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    path = tmp_path / "summary.csv"
    path.write_text(SUMMARY)
    assert bench.arguments_problem(100, 64, 0.75, str(path)) is None
    assert bench.arguments_problem(100, 64, 0.0, str(path)) == \
        "--load must be in (0, 10], got 0.0"
    assert bench.arguments_problem(0, 64, 0.75, str(path)).startswith("--jobs must be 1..")
    path.write_text(SUMMARY.replace("3.716", "x"))
    assert bench.arguments_problem(100, 64, 0.75, str(path)) == \
        f"{path}:2:avg_gpu_num: not a number: 'x'"
