"""Tiresias' starvation promotion against the restart overhead: a promoted job restarts from 0
GPU-s of service, so on G GPUs it is demoted ``thresholds[0] / G`` seconds after it restarts;
within the restart overhead it has made no progress, and two such jobs can take turns for ever
(session 31: two 8-GPU jobs on 8 GPUs, a 30 GPU-s threshold, promote_knob 1 and a 5 s overhead
swapped every 3.75 s). The rule is the paper's; the run warns, once, naming the options that
prevent it, and schedules as before."""

from __future__ import annotations

from pathlib import Path

import pytest
from builders import make_cluster, make_job, simulator
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.scheduling.registry import build_policy

OVERHEAD = 5.0


def _warning(options: dict[str, str], gang: int = 8, overhead: float = OVERHEAD) -> str | None:
    return build_policy("tiresias", options).queue_sort.restart_warning(overhead, gang)


def _both_finish(options: dict[str, str]) -> bool:
    """Two 8-GPU jobs of 100 s on 8 GPUs, the second a second later: do both end by 20,000 s?
    (A first threshold of 41 GPU-s gains 0.125 s a swap: both end near 8,200 s.)"""
    specs = [make_job(name).at(at).gpus(8).work(100).build() for name, at in (("a", 0), ("b", 1))]
    result = simulator("tiresias", make_cluster(nodes=1, gpus=8), specs, options=options,
                       restart_overhead=OVERHEAD, max_time=20_000).run()
    return all(record.finish_time is not None for record in result.jobs)


@pytest.mark.parametrize(("thresholds", "knob", "min_runtime", "warned"), [
    ("30", "1", "0", True), ("30:300:3000", "1", "0", True), ("40", "1", "0", True),
    ("41", "1", "0", False), ("30", "1", "5", True), ("30", "1", "5.5", False),
    ("30", "0", "0", False), ("48", "1", "0", False),
], ids=["session-31", "three-queues", "window-equals-overhead", "window-just-above",
        "protected-only-for-the-overhead", "protected-beyond-it", "no-promotion",
        "a-wider-first-queue"])
def test_the_warning_is_given_exactly_where_promoted_jobs_make_no_progress(
        thresholds: str, knob: str, min_runtime: str, warned: bool) -> None:
    options = {"thresholds": thresholds, "promote_knob": knob, "min_runtime": min_runtime}
    assert (_warning(options) is not None) is warned
    assert _both_finish(options) is not warned  # the warning's condition is the livelock's


def test_the_warning_names_the_numbers_and_the_options_that_prevent_it() -> None:
    text = _warning({"thresholds": "30", "promote_knob": "1"})
    assert text is not None and text.startswith(
        "a job promoted back to queue 0 (promote_knob 1) restarts from 0 GPU-s of service: on "
        "8 GPUs it is demoted 3.75 s later (thresholds[0] 30 GPU-s / 8 GPUs), before its 5 s "
        "restart overhead (restart_overhead) passes")
    assert text.endswith("thresholds with a first value above 40 GPU-s, or min_runtime above "
                         "5 s, prevents it")
    assert _warning({"thresholds": "30", "promote_knob": "1"}, gang=4) is None  # 7.5 s > 5 s
    assert _warning({"thresholds": "30", "promote_knob": "1"}, overhead=0.0) is None


def test_simulate_and_compare_warn_once_per_policy_that_can(tmp_path: Path) -> None:
    trace, cluster = tmp_path / "two.csv", tmp_path / "eight.yaml"
    trace.write_text("job_id,submit_time,num_gpus,duration,queue\n"
                     "a,0,8,100,default\nb,1,8,100,default\nc,2,2,50,default\n")
    cluster.write_text("name: eight\nnode_groups: [{count: 1, gpus: 8, gpu_type: A100}]\n")
    args = ["compare", "--trace", str(trace), "--cluster", str(cluster), "--policies",
            "tiresias,fifo", "--policy-opt", "tiresias:thresholds=30", "--policy-opt",
            "tiresias:promote_knob=2", "--workers", "1", "--restart-overhead"]
    result = CliRunner().invoke(app, [*args, "5", "--out", str(tmp_path / "a")])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and warnings[0].startswith(
        "warning: tiresias: a job promoted back to queue 0 (promote_knob 2)"), result.output
    quiet = CliRunner().invoke(app, [*args, "3", "--out", str(tmp_path / "b")])  # 30 / 8 > 3
    assert quiet.exit_code == 0 and "warning:" not in quiet.output, quiet.output


def test_one_gpu_is_named_in_the_singular() -> None:
    text = _warning({"thresholds": "30", "promote_knob": "1"}, gang=1, overhead=30.0)
    assert text is not None and "on 1 GPU it is demoted 30 s later (thresholds[0] 30 GPU-s / "\
        "1 GPU)" in text
