"""Failures as events of the simulator; checkpoints; what a failure costs (docs/llm.md)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from builders import cluster_of
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.cluster.builtin import resolve_cluster
from dlsched.cluster.cluster import Node
from dlsched.errors import ConfigError, InputError
from dlsched.report.metrics import summarize
from dlsched.run_config import RunConfig
from dlsched.scheduling.registry import build_policy
from dlsched.sim.checkpoint import CheckpointPlan, daly, parse_interval, young
from dlsched.sim.failures import (
    FailureCategory,
    FailureModel,
    FailureProcess,
    llama3_model,
    load_failure_yaml,
    resolve_failure_model,
)
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobKind, JobSpec, JobStatus
from dlsched.workload.trace import Trace

TOL = 1e-6


def _failures(model: FailureModel, seed: int, until: float) -> list:
    process = FailureProcess(model, resolve_cluster("llama3-h100"), seed)
    out = []
    while (f := process.next()) is not None and f.time < until:
        out.append(f)
    return out


def test_failures_replay_with_their_seed() -> None:
    a, b = _failures(llama3_model(), 7, 5 * 86400), _failures(llama3_model(), 7, 5 * 86400)
    assert a == b and a
    assert a != _failures(llama3_model(), 8, 5 * 86400)


def test_llama3_model_gives_419_failures_in_54_days_on_16384_gpus() -> None:
    counts = [len(_failures(llama3_model(), seed, 54 * 86400)) for seed in range(5)]
    assert sum(counts) / len(counts) == pytest.approx(419, rel=0.05)
    shares = {c.name: c.rate_per_gpu_day / llama3_model().rate_per_gpu_day
              for c in llama3_model().categories}
    assert shares["gpu"] == pytest.approx(0.301) and shares["hbm3"] == pytest.approx(0.172)


def test_young_and_daly() -> None:
    assert young(60, 3600) == pytest.approx(math.sqrt(2 * 60 * 3600))
    # Daly's refinement: slightly below Young for delta << M; M when delta >= 2M
    assert young(60, 3600) - 60 < daly(60, 3600) < young(60, 3600)
    assert daly(100, 40) == 40
    plan = CheckpointPlan("young", 60)
    assert plan.interval_for(60, math.inf) == math.inf


@pytest.mark.parametrize("value, message", [(0, "must be > 0"), (-5, "must be > 0"),
                                            ("weekly", "young, daly, adaptive")])
def test_bad_checkpoint_interval(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_interval(value)


def test_run_file_errors_name_file_line_and_field(tmp_path: Path) -> None:
    run = tmp_path / "run.yaml"
    run.write_text("trace: philly-sample\nfailures: llama3\ncheckpoint_interval: 0\n")
    with pytest.raises(ConfigError, match=r"run.yaml:3:checkpoint_interval: must be > 0"):
        RunConfig.from_yaml(run)
    model = tmp_path / "f.yaml"
    model.write_text("categories:\n  - name: gpu\n    rate_per_gpu_day: -1\n")
    with pytest.raises(InputError, match=r"f.yaml:3:categories\[0\].rate_per_gpu_day: must "
                                         r"be a number >= 0"):
        load_failure_yaml(model)


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("categories:\n  - name: gpu\n    rate_per_gpu_day: 0.01\n    repair_hour: 24\n",
                 r"f.yaml:4:categories\[0\].repair_hour: unknown key 'repair_hour' \(did you "
                 r"mean 'repair_hours'\?\)", id="typo-in-a-category"),
    pytest.param("categories:\n  - name: gpu\n    rate_per_gpu_day: 0.01\nseed: 3\n",
                 r"f.yaml:4:seed: unknown key 'seed'; known keys: categories", id="top-level"),
    pytest.param("categories:\n  - name: gpu\n    rate_per_gpu_day: 0.01\n"
                 "  - name: gpu\n    rate_per_gpu_day: 0.02\n",
                 r"f.yaml:4:categories\[1\].name: 'gpu' is named twice", id="same-name"),
    pytest.param("categories:\n  - name: gpu\n    rate_per_gpu_day: .inf\n",
                 r"f.yaml:3:categories\[0\].rate_per_gpu_day: must be finite", id="inf-rate"),
    pytest.param("categories:\n  - name: gpu\n    rate_per_gpu_day: 1e-3\n",
                 r"f.yaml:3:categories\[0\].rate_per_gpu_day: must be a number >= 0, got '1e-3' "
                 r"\(YAML reads 1e-3 as text: write the number in full, or with a point and a "
                 r"signed exponent, 1.0e\+3\)", id="exponent-as-text"),
    pytest.param("categories:\n  - {name: gpu, rate_per_gpu_day: 0.01, repair_hours: '24'}\n",
                 r"f.yaml:2:categories\[0\].repair_hours: must be a number >= 0, got '24' "
                 r"\(a quoted number is text: drop the quotes\)", id="quoted-number"),
])
def test_failure_yaml_refuses_what_it_would_ignore(tmp_path: Path, text: str,
                                                   message: str) -> None:
    """A misspelt ``repair_hour`` was ignored (repairs of 0 h, silently); two causes of one
    name merged their rows; an infinite rate was a numpy 'Probabilities contain NaN'; ``1e-3``
    (text to YAML 1.1) was refused without saying why."""
    model = tmp_path / "f.yaml"
    model.write_text(text)
    with pytest.raises(InputError, match=message):
        load_failure_yaml(model)


def test_failure_yaml_may_lose_a_node_for_good(tmp_path: Path) -> None:
    model = tmp_path / "f.yaml"
    model.write_text("categories:\n  - {name: gpu, rate_per_gpu_day: 0.01, repair_hours: .inf}\n")
    assert load_failure_yaml(model).categories[0].repair_hours == math.inf


def test_llama3_times_infinity_is_refused() -> None:
    with pytest.raises(ConfigError, match="llama3xK needs a finite number K >= 0"):
        resolve_failure_model("llama3xinf")


def _record_segments(sim: Simulator) -> dict[str, float]:
    """Progress of every run segment, measured from the executor's starts and stops (not
    from the core's books): what the jobs really computed, lost work included."""
    gross: dict[str, float] = {}
    open_: dict[str, tuple[float, float]] = {}
    executor = sim.core.executor
    start, stop = executor.start, executor.stop

    def on_start(job, now):  # noqa: ANN001, ANN202
        open_[job.job_id] = (job.productive_from, job.rate)
        start(job, now)

    def on_stop(job, now):  # noqa: ANN001, ANN202
        since, rate = open_.pop(job.job_id)
        gross[job.job_id] = gross.get(job.job_id, 0.0) + rate * max(0.0, now - since)
        stop(job, now)

    executor.start, executor.stop = on_start, on_stop
    sim._open_segments = open_  # type: ignore[attr-defined]
    return gross


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), jobs=st.integers(1, 12),
       interval=st.sampled_from(["young", "daly", "adaptive", 50.0]),
       spares=st.sampled_from([0, 0, 1]))
def test_no_work_is_counted_twice(seed: int, jobs: int, interval: object, spares: int) -> None:
    cluster = cluster_of(*(Node(f"n{i}", "V100", 4) for i in range(3)))
    specs = tuple(JobSpec(f"j{i:02d}", submit_time=float(17 * i), num_gpus=1 + i % 4,
                          work=200.0 + 97 * i) for i in range(jobs))
    model = FailureModel("test", (FailureCategory("gpu", 40.0, 0.02),))  # ~1 per 540 s a GPU
    sim = Simulator(cluster, Trace("t", specs), build_policy("fifo"),
                    SimConfig(restart_overhead=5.0, seed=seed, failures=model,
                              checkpoint=CheckpointPlan(interval, 10.0), hot_spares=spares,
                              max_time=1e6))
    gross = _record_segments(sim)
    result = sim.run()
    for job_id, (since, rate) in sim._open_segments.items():  # type: ignore[attr-defined]
        end = sim.core.jobs[job_id].finish_time or result.end_time
        gross[job_id] = gross.get(job_id, 0.0) + rate * max(0.0, end - since)
    for record in result.jobs:
        assert record.status == JobStatus.FINISHED.value
        assert record.work_done == pytest.approx(record.work)
        assert record.lost_work >= -TOL
        # every unit computed is either kept once or lost once
        assert gross.get(record.job_id, 0.0) == pytest.approx(
            record.work_done + record.lost_work, rel=1e-6, abs=1e-6)
    assert summarize(result).lost_gpu_hours == pytest.approx(
        sum(r.lost_gpu_seconds for r in result.jobs) / 3600)


def test_philly_with_failures_restarts_jobs_and_reports_lost_gpu_hours() -> None:
    from dlsched.workload.bundled import resolve_trace
    from dlsched.workload.readers.base import ReaderOptions

    trace = resolve_trace("philly-sample", options=ReaderOptions(limit=300))
    cluster = resolve_cluster("philly")
    config = SimConfig(seed=3, failures=llama3_model(200.0), checkpoint=CheckpointPlan())
    result = Simulator(cluster, trace, build_policy("tiresias"), config).run()
    summary = summarize(result)
    assert summary.jobs_finished == summary.jobs_submitted
    assert summary.job_interruptions > 0 and summary.lost_gpu_hours > 0
    assert 0 < summary.ettr < 1
    hit = [j for j in result.jobs if j.failures]
    assert all(j.lost_gpu_seconds >= 0 for j in hit)
    clean = summarize(Simulator(cluster, trace, build_policy("tiresias"),
                                SimConfig(seed=3)).run())
    assert clean.lost_gpu_hours == 0 and clean.ettr is None


def test_adaptive_rate_divides_by_the_gpus_that_were_up() -> None:
    """Only an up node can fail (a failure drawn on a node in repair or a held spare is
    dropped), so the observed rate is failures per up-GPU-second. The exposure counted every
    GPU of the cluster: with a quarter of the nodes spares or in repair, ``adaptive`` saw
    0.67-0.75 of the true rate (3 seeds, 64 GPUs of elasticflow-128, 4 spares, llama3x100)
    and checkpointed too rarely."""
    from dlsched.sim.failures import Failure

    model = FailureModel("m", (FailureCategory("gpu", 0.5, 1.0),))
    sim = Simulator(cluster_of(*(Node(f"n{i}", "V100", 8) for i in range(4))),
                    Trace("t", (JobSpec("j", 0.0, 8, work=1e9),)), build_policy("fifo"),
                    SimConfig(failures=model, checkpoint=CheckpointPlan("adaptive", 10.0),
                              hot_spares=1, max_time=3000.0))
    assert sim.failures is not None
    sim.failures.process.rate = 0.0  # only the injected failure
    sim.failures.inject(Failure(1000.0, 0, "gpu", 1000.0))  # the spare takes its place
    sim.failures.inject(Failure(1500.0, 1, "gpu", 10_000.0))  # no spare left: 16 GPUs up
    sim.run()
    book = sim.core.resilience
    assert book is not None
    # 0-1500 s: 24 GPUs up (the spare held back), then 16 until 3000 s
    exposure = 24 * 1500 + 16 * 1500
    prior = model.rate_per_gpu_day / 86400
    assert book.rate_per_gpu_second(3000.0) == pytest.approx((2 + 1) / (exposure + 1 / prior))


@pytest.mark.parametrize("rule", ["young", "daly", "adaptive"])
def test_free_checkpoints_lose_no_work(rule: str) -> None:
    """``--checkpoint-cost 0``: Young's interval sqrt(2 delta M) tends to 0, so nothing is
    lost. The rules returned an infinite interval for delta = 0 (never checkpoint), so every
    failure threw away all work since the start: a 3-day 64-GPU job under llama3x100 took
    16,472 h (ETTR 0.4%) at cost 0 against 72 h at cost 0.001 s."""
    from dlsched.sim.failures import Failure

    model = FailureModel("m", (FailureCategory("gpu", 1.0, 1.0),))
    sim = Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                    Trace("t", (JobSpec("j", 0.0, 4, work=1000.0),)), build_policy("fifo"),
                    SimConfig(restart_overhead=0.0, failures=model,
                              checkpoint=CheckpointPlan(rule, 0.0)))
    assert sim.failures is not None
    sim.failures.process.rate = 0.0  # only the injected failure
    sim.failures.inject(Failure(500.0, 0, "gpu", 3600.0))
    record = sim.run().jobs[0]
    assert record.failures == 1 and record.lost_work == 0
    assert record.finish_time == pytest.approx(1000.0)  # resumed on n1 at once, at 500 done


@pytest.mark.parametrize("spares", [2, 3, 100])
def test_more_hot_spares_than_the_cluster_can_spare_is_a_config_error(spares: int) -> None:
    """``--hot-spares 100`` on a 16-node cluster was an IndexError traceback."""
    with pytest.raises(ConfigError, match=rf"--hot-spares {spares}: the cluster test has 2 "
                                          r"nodes; at most 1 can be held back as spares"):
        Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                  Trace("t", (JobSpec("j", 0.0, 4, work=10.0),)), build_policy("fifo"),
                  SimConfig(failures=llama3_model(), hot_spares=spares))


def test_a_job_waiting_for_a_repair_is_not_stopped_as_stalled() -> None:
    """An 8-GPU job on two 4-GPU nodes, one of them down for 24 h (a GPU failure's repair):
    with 60 s rounds the stall check (1,000 idle cycles) ended the run after 16.7 h with the
    job unfinished, 'nothing could start', as if it never could."""
    from dlsched.sim.failures import Failure

    quiet = FailureModel("none", (FailureCategory("gpu", 0.0, 0.0),))  # injected only
    sim = Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                    Trace("t", (JobSpec("j", 100.0, 8, work=1000.0),)), build_policy("fifo"),
                    SimConfig(restart_overhead=0.0, round_seconds=60.0, failures=quiet))
    assert sim.failures is not None
    sim.failures.inject(Failure(10.0, 1, "gpu", 24 * 3600.0))
    result = sim.run()
    assert sim.stalled_at is None
    record = result.jobs[0]
    assert record.status == JobStatus.FINISHED.value
    assert record.first_start == pytest.approx(10.0 + 24 * 3600)  # at the repair


def test_a_job_that_no_repair_helps_still_stops_the_run() -> None:
    """The wait is bounded: the repairs pending when the run first looks stalled; a node lost
    for good (an infinite repair) is not waited for."""
    from dlsched.sim.failures import Failure

    quiet = FailureModel("none", (FailureCategory("gpu", 0.0, 0.0),))
    sim = Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                    Trace("t", (JobSpec("j", 100.0, 8, work=1000.0),)), build_policy("fifo"),
                    SimConfig(restart_overhead=0.0, round_seconds=60.0, failures=quiet,
                              stall_cycles=5))
    assert sim.failures is not None
    sim.failures.inject(Failure(10.0, 1, "gpu", float("inf")))  # lost for good
    sim.run()
    assert sim.stalled_at is not None and sim.stalled_at < 1000


def _node_1_down_from_10_to_410_s(policy: str, specs: tuple[JobSpec, ...]) -> dict:
    """The records of ``specs`` on two nodes of 4 GPUs whose node 1 fails at 10 s for 400 s
    (the only failure: injected)."""
    from dlsched.sim.failures import Failure

    quiet = FailureModel("none", (FailureCategory("gpu", 0.0, 0.0),))
    sim = Simulator(cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4)),
                    Trace("t", specs), build_policy(policy),
                    SimConfig(restart_overhead=0.0, failures=quiet))
    assert sim.failures is not None
    sim.failures.inject(Failure(10.0, 1, "gpu", 400.0))
    return {r.job_id: r for r in sim.run().jobs}


@pytest.mark.parametrize("policy", ["fifo", "backfill", "edf", "tiresias"])
def test_a_job_starts_when_the_node_it_waits_for_is_repaired(policy: str) -> None:
    # Node 0 runs a long job; a 4-GPU job arriving at 20 s fits only on node 1 (Tiresias
    # would preempt the long job at 900 s, 3,600 GPU-s). A failed attempt is not retried
    # while no start or stop touched the job's nodes: a repair is such a change (it waited for
    # the long job's end, 10^5 s, and on a failure-heavy run stopped as "nothing could start").
    records = _node_1_down_from_10_to_410_s(policy, (
        JobSpec("long", 0.0, 4, work=1e5), JobSpec("late", 20.0, 4, work=500.0)))
    assert records["late"].first_start == pytest.approx(410.0)
    assert records["late"].status == JobStatus.FINISHED.value


@pytest.mark.parametrize("policy", ["fifo", "backfill", "edf", "tiresias"])
def test_a_job_hit_by_a_failure_restarts_when_its_node_is_repaired(policy: str) -> None:
    # Both nodes busy: the job on node 1 goes back to the queue and fits again only once the
    # node is back (node 0's job runs ~10^5 s).
    records = _node_1_down_from_10_to_410_s(policy, (
        JobSpec("long", 0.0, 4, work=1e5), JobSpec("hit", 1.0, 4, work=500.0)))
    assert records["hit"].finish_time < 2000.0


def test_fifo_under_heavy_failures_finishes_every_job() -> None:
    # llama3x1000 on the Philly cluster: nodes fail every few hours and take hours to repair;
    # two jobs of one virtual cluster waited beside its repaired nodes until the run stopped.
    from dlsched import experiment

    config = RunConfig(trace="philly-sample", cluster="philly", limit=200,
                       failures="llama3x1000", resilience="elastic")
    cluster = resolve_cluster("philly")
    sim = Simulator(cluster, experiment.load_trace(config, cluster), build_policy("fifo"),
                    SimConfig(**experiment.failure_options(config)))
    result = sim.run()
    assert sim.stalled_at is None
    assert all(r.status == JobStatus.FINISHED.value for r in result.jobs)


def test_failure_options_without_failures_are_named_as_doing_nothing(tmp_path: Path) -> None:
    # --hot-spares and --checkpoint shape the response to node failures; without --failures
    # they were ignored in silence (a user thought the run checkpointed).
    from typer.testing import CliRunner

    from dlsched.cli import app

    base = ["simulate", "--trace", "philly-sample", "--limit", "5", "--cluster", "small-16"]
    idle = CliRunner().invoke(app, [*base, "--hot-spares", "1", "--checkpoint", "600",
                                    "--out", str(tmp_path / "a")])
    assert idle.exit_code == 0, idle.output
    assert ("warning: --checkpoint, --hot-spares have no effect without --failures"
            in " ".join(idle.output.split()))
    used = CliRunner().invoke(app, [*base, "--hot-spares", "1", "--failures", "llama3",
                                    "--out", str(tmp_path / "b")])
    assert used.exit_code == 0, used.output
    assert "no effect without" not in used.output


@pytest.mark.parametrize(("ends_at", "finish"), [(None, None), (1000.0, 1000.0)],
                         ids=["training", "service-replica"])
def test_a_job_with_a_fixed_end_does_not_make_up_its_downtime(
        ends_at: float | None, finish: float | None) -> None:
    # "hit" holds node 1 from 1 s, is stopped by the failure at 10 s and restarts at 410 s
    # on the repaired node. A training job makes up the 400 s it was down (and its lost
    # work): it ends after 1,400 s. A service replica serves until its service ends (1,000
    # s) whatever the core did: it held its GPUs 400 s past its last request.
    records = _node_1_down_from_10_to_410_s("fifo", (
        JobSpec("long", 0.0, 4, work=1e5),
        JobSpec("hit", 1.0, 4, work=999.0, kind=JobKind.SERVICE, ends_at=ends_at)))
    hit = records["hit"]
    assert hit.status == JobStatus.FINISHED.value and hit.failures == 1
    if finish is None:
        assert hit.finish_time > 1400.0
    else:
        assert hit.finish_time == pytest.approx(finish)
        assert hit.gpu_seconds == pytest.approx(4 * (9.0 + 590.0))
        # what it served counts, nothing is rolled back to a checkpoint, the 400 s down
        # are not counted as done (its record said 999 s done, 9 s lost)
        assert hit.work_done == pytest.approx(599.0) and hit.lost_work == 0.0
        assert hit.useful_seconds == pytest.approx(599.0)


def test_a_fixed_end_must_follow_the_submission() -> None:
    with pytest.raises(ValueError, match="ends_at must be after submit_time 5.0, got 5.0"):
        JobSpec("svc", 5.0, 1, work=10.0, ends_at=5.0)


def test_simulate_prints_the_failures_it_drew(tmp_path: Path) -> None:
    """A run under --failures printed the same line as one without: its node failures, the
    jobs they stopped and its ETTR were in summary.json only."""
    import json

    from typer.testing import CliRunner

    from dlsched.cli import app

    failures = tmp_path / "failures.yaml"
    failures.write_text("categories:\n  - {name: gpu, rate_per_gpu_day: 0.01, repair_hours: 6}\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["simulate", "--trace", "pollux-1", "--cluster",
                                      "pollux-64", "--policy", "fifo", "--limit", "40",
                                      "--failures", str(failures), "--out", str(out)])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    said = " ".join(result.output.split())
    assert (f"{summary['node_failures']} node failure" in said
            and f"ETTR {summary['ettr'] * 100:.1f}%" in said), said


def test_a_checkpoint_cost_for_llm_jobs_only_is_named_as_doing_nothing(tmp_path: Path) -> None:
    """An LLM job's checkpoint costs its size over the storage bandwidth: --checkpoint-cost
    changed nothing on examples/llm/llm-jobs.csv (same jobs.csv at 60 and 6,000 s), silently."""
    from typer.testing import CliRunner

    from dlsched.cli import app

    trace = Path(__file__).resolve().parents[2] / "examples" / "llm" / "llm-jobs.csv"
    base = ["simulate", "--trace", str(trace), "--cluster", "elasticflow-128", "--policy",
            "llm-size", "--failures", "llama3"]
    idle = CliRunner().invoke(app, [*base, "--checkpoint-cost", "6000",
                                    "--out", str(tmp_path / "a")])
    assert idle.exit_code == 0, idle.output
    assert ("warning: --checkpoint-cost has no effect on this trace: every job is an LLM job"
            in " ".join(idle.output.split()))
    plain = CliRunner().invoke(app, [*base, "--out", str(tmp_path / "b")])
    assert "--checkpoint-cost has no effect" not in plain.output
