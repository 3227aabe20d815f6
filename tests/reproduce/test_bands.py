"""Reference bands on fast subsets: dlsched in a peer's named setting stays within 5% of the
peer's own simulator (a failing band fails CI). The full tables are `dlsched reproduce NAME`
and benchmarks/side_by_side.py; their results are in benchmarks/RESULTS.md."""

from __future__ import annotations

import pytest

from dlsched.reproduce.registry import ExperimentOptions, get_experiment
from dlsched.reproduce.runner import run_experiment


def cells(name: str, case: str, variant: str | None, policies: str) -> dict[tuple, float]:
    experiment = get_experiment(name)
    options = ExperimentOptions((case,), () if variant is None else (variant,),
                                options={"policies": policies})
    rows = run_experiment(experiment, options)
    assert rows and all(r.reference is not None for r in rows)
    return {(r.policy, r.metric): r.rel_diff for r in rows}


def test_pollux_artifact_tiresias_on_workload_6() -> None:
    diffs = cells("pollux-osdi21", "workload-6", "1.0", "tiresias")
    assert abs(diffs[("tiresias", "jct_mean_s")]) <= 0.05, diffs
    assert abs(diffs[("tiresias", "makespan_s")]) <= 0.05, diffs


def test_pollux_artifact_optimus_on_workload_6() -> None:
    diffs = cells("pollux-osdi21", "workload-6", "1.0", "optimus")
    assert abs(diffs[("optimus", "jct_mean_s")]) <= 0.05, diffs
    assert abs(diffs[("optimus", "makespan_s")]) <= 0.05, diffs


@pytest.mark.parametrize("workload", ["workload-2", "workload-6"])
def test_pollux_artifact_optimus_at_half_load(workload: str) -> None:
    # at load 0.5 jobs often run alone on many GPUs: each epoch's time must be rounded on the
    # placement the job runs on (pollux-epochs), or yolov3 lands on a slow spread placement
    # (workload 2: +9.3%, workload 6: +7.0% with pollux-progress)
    diffs = cells("pollux-osdi21", workload, "0.5", "optimus")
    assert abs(diffs[("optimus", "jct_mean_s")]) <= 0.05, diffs


def test_pollux_artifact_tiresias_on_workload_7_at_load_1_5() -> None:
    # on pollux-progress +4.1% (each epoch timed at the requested GPUs packed, not where the
    # job runs); pollux-epochs -0.2%
    diffs = cells("pollux-osdi21", "workload-7", "1.5", "tiresias")
    assert abs(diffs[("tiresias", "jct_mean_s")]) <= 0.02, diffs


def test_pollux_artifact_pollux_on_workload_3() -> None:
    # workload 3: the quickest Pollux run (~4 CPU s). The band for Pollux is 10%; 5%
    # since the setting explores, penalises starts and learns sync as the artifact does
    # (-3.0%; -9.9% before: benchmarks/RESULTS.md, session 28 helper P)
    diffs = cells("pollux-osdi21", "workload-3", "1.0", "pollux")
    assert abs(diffs[("pollux", "jct_mean_s")]) <= 0.05, diffs


def test_pollux_artifact_pollux_on_workload_3_at_half_load() -> None:
    # -1.5% with learn_sync; +6.0% without it (jobs grew one doubling at a time, valued with
    # their true sync cost), -11.8% without explore (session 28 helper P)
    diffs = cells("pollux-osdi21", "workload-3", "0.5", "pollux")
    assert abs(diffs[("pollux", "jct_mean_s")]) <= 0.05, diffs


def test_pollux_artifact_pollux_on_workload_3_at_load_1_5() -> None:
    # -2.1% since each job picks its batch by the fitted model among the artifact's candidates
    # (goodput-measured-fit); -8.4% when it chose knowing the true step times (session 28
    # helper P2)
    diffs = cells("pollux-osdi21", "workload-3", "1.5", "pollux")
    assert abs(diffs[("pollux", "jct_mean_s")]) <= 0.05, diffs


@pytest.mark.parametrize("policy", ["fifo", "srtf", "tiresias"])
def test_tiresias_artifact_on_2000_philly_jobs(policy: str) -> None:
    diffs = cells("tiresias-nsdi19", "philly-tiresias-2000", None, policy)
    assert abs(diffs[(policy, "jct_mean_s")]) <= 0.05, diffs


@pytest.mark.parametrize("policy", ["gavel-maxmin", "gavel-maxmin-agnostic"])
def test_gavel_simulator_las_on_100_continuous_jobs(policy: str) -> None:
    diffs = cells("gavel-osdi20", "continuous-100", None, policy)
    assert abs(diffs[(policy, "jct_mean_s")]) <= 0.05, diffs
    if policy == "gavel-maxmin":  # the agnostic one's GPU type order is random each round
        assert abs(diffs[(policy, "makespan_s")]) <= 0.05, diffs


def test_gavel_simulator_ftf_on_100_continuous_jobs() -> None:
    # min max rho with no second stage, as Gavel's finish_time_fairness_perf solves it
    diffs = cells("gavel-osdi20", "continuous-100", None, "gavel-ftf")
    assert abs(diffs[("gavel-ftf", "jct_mean_s")]) <= 0.05, diffs
