"""``job_table``: the reports read a run's records as columns, once. The jobs table, the summary
and the fairness metrics must be what the record-by-record definitions give, bit for bit, for
records kept as objects and for a ``JobRecords`` (``keep_finished=False``)."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import numpy as np
import pytest
from builders import make_cluster, make_job, simulator

from dlsched.report.fairness import (
    FairnessInputs,
    ftf_rhos,
    gpu_seconds_by_tenant,
    isolated_seconds,
    jain_index,
)
from dlsched.report.job_table import job_table
from dlsched.report.metrics import (
    deadline_satisfaction,
    finished_jcts,
    jct_by_queue,
    makespan,
    percentiles,
    queueing_delays,
    summarize,
    utilization,
    wait_by_queue,
)
from dlsched.report.output import job_columns, write_run
from dlsched.sim.finished import JobRecords
from dlsched.sim.result import SimulationResult
from dlsched.workload.job import JobSpec


def _workload(seed: int, jobs: int = 60) -> list[JobSpec]:
    rng = random.Random(seed)
    specs = []
    for i in range(jobs):
        builder = (make_job(f"j{rng.randrange(10**4):04d}-{i}").at(float(rng.randrange(3000)))
                   .gpus(rng.choice([1, 2, 4, 32])).work(rng.expovariate(1 / 900) + 0.3)
                   .queue(rng.choice(["a", "b", "c,d"])))
        if rng.random() < 0.3:
            builder = builder.deadline(rng.uniform(3000, 9000))
        specs.append(builder.build())
    return specs


def _run(policy: str, keep: bool) -> tuple[SimulationResult, FairnessInputs]:
    sim = simulator(policy, make_cluster(nodes=3, gpus=4), _workload(2), keep_finished=keep,
                    max_time=2500.0)
    result = sim.run()
    inputs = FairnessInputs.of_run(result, isolated_seconds(sim.trace, sim.core.throughput),
                                   sim.cluster)
    return result, inputs


def _columns_by_record(result: SimulationResult) -> list[list[object]]:
    """``job_columns`` as it was written before the table: record by record."""
    jobs = sorted(result.jobs, key=lambda j: (j.submit_time, j.job_id))

    def opt(value: float | None) -> float | None:
        return None if value is None else float(value)

    return [[j.job_id for j in jobs], [j.queue for j in jobs], [j.num_gpus for j in jobs],
            [float(j.submit_time) for j in jobs], [opt(j.first_start) for j in jobs],
            [opt(j.finish_time) for j in jobs], [opt(j.jct) for j in jobs],
            [opt(j.queueing_delay) for j in jobs], [j.status for j in jobs],
            [j.preemptions for j in jobs], [float(j.gpu_seconds) for j in jobs],
            [j.pending_reason for j in jobs], [None] * len(jobs), [j.resizes for j in jobs],
            [opt(j.deadline) for j in jobs]]


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
@pytest.mark.parametrize("keep", [True, False])
def test_the_table_gives_what_the_records_give(policy: str, keep: bool) -> None:
    result, inputs = _run(policy, keep)
    assert isinstance(result.jobs, JobRecords) is not keep
    table = job_table(result.jobs)
    assert table.job_id == [r.job_id for r in result.jobs]
    assert job_columns(result, None, table) == _columns_by_record(result)
    summary = summarize(result, inputs, table)
    jcts = finished_jcts(result)
    assert 0 < len(jcts) < len(result.jobs)  # unfinished jobs are part of the case
    assert summary.jobs_finished == len(jcts)
    assert summary.jct_mean == float(np.mean(jcts))
    assert [summary.jct_median, summary.jct_p95, summary.jct_p99] == percentiles(
        jcts, (50, 95, 99))
    assert summary.queueing_delay_mean == float(np.mean(queueing_delays(result)))
    assert summary.makespan == makespan(result)
    assert summary.utilization == utilization(result)
    assert (summary.deadline_jobs, summary.deadline_satisfaction) == deadline_satisfaction(
        result)
    assert summary.deadline_jobs > 0
    assert summary.gpu_hours == sum(float(j.gpu_seconds) for j in result.jobs) / 3600.0
    assert summary.preemptions == sum(j.preemptions for j in result.jobs)
    assert summary.jain_tenants == jain_index(list(gpu_seconds_by_tenant(result.jobs).values()))
    rhos = ftf_rhos(result, inputs.isolated_seconds)
    assert rhos and ftf_rhos(result, inputs.isolated_seconds, table) == rhos
    assert summary.ftf_rho_max == max(rhos.values())
    assert summarize(result, inputs) == summary  # the table made inside: the same


def test_kept_and_forgotten_records_summarize_alike() -> None:
    kept, kept_inputs = _run("tiresias", True)
    forgot, inputs = _run("tiresias", False)
    a, b = summarize(kept, kept_inputs).to_dict(), summarize(forgot, inputs).to_dict()
    for key in ("wall_seconds", "cycle_ms_mean"):
        a.pop(key), b.pop(key)
    assert a == b


@pytest.mark.parametrize("keep", [True, False], ids=["records", "finished-columns"])
def test_per_queue_means_and_jcts_from_the_table_are_the_records(keep: bool) -> None:
    """The columns give what a loop over the records gives, bit for bit."""
    result, _ = _run("tiresias", keep)
    jobs = list(result.jobs)
    jcts = [float(j.jct) for j in jobs if j.status == "finished" and j.jct is not None]
    by_jct: dict[str, list[float]] = {}
    by_wait: dict[str, list[float]] = {}
    for j in jobs:
        if j.status == "finished" and j.jct is not None:
            by_jct.setdefault(j.queue, []).append(float(j.jct))
        if j.queueing_delay is not None:
            by_wait.setdefault(j.queue, []).append(float(j.queueing_delay))
    table = job_table(result.jobs)
    for given in (table, None):
        assert finished_jcts(result, given) == jcts
        assert jct_by_queue(result, given) == {q: float(np.mean(v))
                                               for q, v in sorted(by_jct.items())}
        assert wait_by_queue(result, given) == {q: float(np.mean(v))
                                                for q, v in sorted(by_wait.items())}
    assert len(by_jct) == 3  # the queues a, b and "c,d"


def test_the_report_reads_a_runs_finished_jobs_as_columns_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTML report makes each run's columns once and reads nothing record by record (a
    pass of records over the whole Philly table costs ~0.6 s, and the report made ~5 per
    run); its page is the one the records give."""
    from dlsched.report.html import render_report

    kept, inputs = _run("tiresias", True)
    columns, _ = _run("tiresias", False)
    columns = dataclasses.replace(columns, wall_seconds=kept.wall_seconds,
                                  cycle_seconds=kept.cycle_seconds)
    expected = render_report([kept], "t", [inputs])

    def no_records(self: JobRecords) -> None:
        raise AssertionError("a record-by-record pass")

    monkeypatch.setattr(JobRecords, "__iter__", no_records)
    assert render_report([columns], "t", [inputs]) == expected


def test_a_comparison_reuses_each_runs_summary(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``write_comparison`` hands the report the summaries ``write_run`` returned: the page is
    the one the report makes when it summarizes the runs itself, without summarizing again."""
    from dlsched.report import html

    runs = [_run(policy, False) for policy in ("fifo", "tiresias")]
    summaries = [write_run(result, tmp_path / result.info.policy, fairness=inputs)
                 for result, inputs in runs]
    results, inputs = [r for r, _ in runs], [i for _, i in runs]
    expected = html.render_report(results, "t", inputs)

    def again(*args: object, **kwargs: object) -> None:
        raise AssertionError("summarized again")

    monkeypatch.setattr(html, "summarize", again)
    assert html.render_report(results, "t", inputs, summaries=summaries) == expected
