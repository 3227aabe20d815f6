"""The services report: its series by hand and ``report.html`` from ``simulate --services``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from serving_helpers import azure_csv, flat_profile, trace
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.report.service_plots import ServiceSeries, intervals_count, step_sum
from dlsched.serving.llm_replica import LlmEngineConfig, LlmReplica
from dlsched.serving.metrics import Slo
from dlsched.serving.report_series import series_of
from dlsched.serving.routing import simulate_slots
from dlsched.serving.run import ServiceOutcome
from dlsched.serving.service import ServiceSpec


def test_step_functions_sum_and_intervals_count() -> None:
    grid = np.array([0.0, 1.0, 2.0, 3.0])
    a = (np.array([0.5, 2.0]), np.array([2.0, 0.0]))
    b = (np.array([1.0]), np.array([1.0]))
    assert step_sum([a, b], grid).tolist() == [0.0, 3.0, 1.0, 1.0]
    times, counts = intervals_count([0.0, 1.0], [2.0, 5.0])
    assert times.tolist() == [0.0, 1.0, 2.0, 5.0] and counts.tolist() == [1, 2, 1, 0]


def test_the_series_follow_the_batch_and_the_kv_cache_by_hand() -> None:
    """Flat profile (prefill 1 s, decode 0.1 s): r0 prefills over [0, 1], r1 over [1, 2];
    both run from 2 until r1 ends at 2.1; r0 alone until 2.2."""
    tr = trace([0.0, 0.5], [10, 10], [3, 2])
    log, slots = simulate_slots(tr, lambda lg, s: LlmReplica(flat_profile(), 100, lg,
                                                             LlmEngineConfig(), s), [0.0])
    replica = slots[0].replica
    times, batch, _ = zip(*replica.series, strict=True)
    assert times == pytest.approx([1.0, 2.0, 2.1, 2.2]) and batch == (1, 2, 1, 0)
    spec = ServiceSpec("s", "toy", "A100-80G", 1, 1, Slo(ttft=1.2), "t.csv")
    outcome = ServiceOutcome(spec, log, [replica], [0.0], {}, 0.0, slots)
    series = series_of(outcome)
    assert series.met.tolist() == [True, False]  # TTFT 1.0 and 1.5
    grid, kv = series.kv_fraction
    at = np.searchsorted(grid, 2.05) - 1  # both running: 11 + 12 tokens -> 1 + 1 blocks
    assert kv[at] == pytest.approx(2 / 100)


def test_simulate_services_writes_a_report_with_the_service_plots(tmp_path: Path) -> None:
    rows = [f"2023-11-16 18:00:{i * 0.5:09.6f},{200 + 37 * (i % 5)},{5 + i % 7}"
            for i in range(30)]
    azure_csv(tmp_path / "reqs.csv", rows)
    (tmp_path / "services.yaml").write_text(
        "services:\n  - name: chat\n    model: llama2-70b\n    gpu: A100-80G\n"
        "    tensor_parallel: 8\n    replicas: 2\n    slo: {ttft_ms: 2500, tpot_ms: 150}\n"
        "    trace: reqs.csv\n")
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["simulate", "--services",
                                      str(tmp_path / "services.yaml"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    page = (out / "report.html").read_text()
    for heading in ("SLO attainment over time", "End-to-end latency (CDF)",
                    "Batch size over time", "Replicas over time", "KV-cache use over time"):
        assert f"<h2>{heading}" in page
    assert page.count("<svg") == 5 and "no data" not in page
    assert "<td>chat</td><td>30</td>" in page


def test_training_preemptions_and_gpus_held_come_from_the_segments(tmp_path: Path) -> None:
    from dlsched.serving.report_series import shared_cluster

    head = "job_id,start,end,num_gpus,gpu_share\n"
    (tmp_path / "segments.csv").write_text(
        head + "service:chat/0,0,100,8,1\nservice:chat/1,40,100,8,1\n"
        "t1,0,40,8,1\nt1,60,90,8,1\nt2,10,30,4,0.5\n")
    shared = shared_cluster(tmp_path / "segments.csv")
    assert shared is not None
    assert shared.preemptions == (40.0,)  # t1's first run ended when chat/1 took its GPUs
    grid = np.array([0.0, 20.0, 50.0, 70.0])
    assert step_sum([shared.service_gpus], grid).tolist() == [8, 8, 16, 16]
    assert step_sum([shared.training_gpus], grid).tolist() == [8, 10, 0, 8]
    (tmp_path / "only.csv").write_text(head + "service:chat/0,0,100,8,1\n")
    assert shared_cluster(tmp_path / "only.csv") is None


def test_the_metrics_come_in_two_tables_of_at_most_six_columns() -> None:
    """One table of ten columns did not fit a 1,400-px page: GPU-hours, peak batch and KV
    peak were hidden behind a scroll."""
    import re

    from dlsched.report.service_html import COLUMNS, render_services_report

    html = render_services_report("t", "m", {"chat": {"requests": 10, "gpu_hours": 1.5}}, [])
    tables = re.findall(r"<table>.*?</table>", html, flags=re.S)
    heads = [re.findall(r"<th>([^<]*)</th>", table) for table in tables]
    assert len(tables) == 2 and all(len(head) <= 6 for head in heads)
    assert sum(len(head) - 1 for head in heads) == len(COLUMNS)  # each has "service" first
    assert "<td>1.5</td>" in html and "<h3>Latency and resources</h3>" in html


def test_the_report_says_which_services_it_does_not_plot_and_shows_no_dnn_tpot() -> None:
    """A disaggregated service (chat-split) was in the tables but silently missing from every
    plot; a DNN service's TPOT read "0 / 0 / 0" ms (it has no tokens)."""
    from dlsched.report.service_html import render_services_report

    arrival = np.array([0.0, 1.0])
    chat = ServiceSeries("chat", arrival, arrival + 0.5, np.array([True, True]),
                         (arrival, np.array([1.0, 0.0])), (arrival, np.array([1.0, 1.0])),
                         (arrival, np.array([1.0, 1.0])), None)
    services = {"chat": {"kind": "llm", "tpot_p50": 0.05},
                "chat-split": {"kind": "llm", "tpot_p50": 0.06},
                "vision": {"kind": "dnn", "tpot_p50": 0.0, "tpot_p90": 0.0, "tpot_p99": 0.0}}
    html = render_services_report("t", "m", services, [chat])
    assert "Not in the plots below: chat-split, vision" in html
    vision = html[html.index("<td>vision</td>"):].split("</tr>")[0]
    assert "<td>–</td>" in vision and "0 / 0 / 0" not in vision


def test_simulate_services_with_a_trace_prints_the_training_jobs_line(tmp_path: Path) -> None:
    """Only the services' lines were printed: nothing said how the trace's jobs fared (and
    summary.json counts the replicas among its jobs)."""
    azure_csv(tmp_path / "reqs.csv", [f"2023-11-16 18:00:{i:09.6f},200,5" for i in range(10)])
    (tmp_path / "services.yaml").write_text(
        "services:\n  - name: chat\n    model: llama2-70b\n    gpu: A100-80G\n"
        "    tensor_parallel: 8\n    replicas: 1\n    slo: {ttft_ms: 2500, tpot_ms: 150}\n"
        "    trace: reqs.csv\n")
    args = ["simulate", "--services", str(tmp_path / "services.yaml")]
    out = tmp_path / "mix"
    result = CliRunner().invoke(app, [*args, "--trace", "philly-sample", "--limit", "20",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "training jobs: 20/20 finished, mean JCT " in result.output
    alone = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "alone")])
    assert alone.exit_code == 0 and "training jobs" not in alone.output


@pytest.mark.parametrize("trace_args", [[], ["--trace", "philly-sample", "--limit", "20"]],
                         ids=["services-alone", "beside-a-trace"])
def test_a_services_runs_config_yaml_repeats_it(tmp_path: Path, trace_args: list[str]) -> None:
    """Its config.yaml named the default trace and cluster it was not given: the services
    alone came back with philly-sample's jobs, and services on their own nodes were put on
    philly ("cluster philly has no A100-80G GPUs")."""
    azure_csv(tmp_path / "reqs.csv", [f"2023-11-16 18:00:{i:09.6f},200,5" for i in range(10)])
    (tmp_path / "services.yaml").write_text(
        "services:\n  - name: chat\n    model: llama2-70b\n    gpu: A100-80G\n"
        "    tensor_parallel: 8\n    replicas: 1\n    slo: {ttft_ms: 2500, tpot_ms: 150}\n"
        "    trace: reqs.csv\n")
    first, again = tmp_path / "first", tmp_path / "again"
    result = CliRunner().invoke(app, ["simulate", "--services", str(tmp_path / "services.yaml"),
                                      *trace_args, "--out", str(first)])
    assert result.exit_code == 0, result.output
    rerun = CliRunner().invoke(app, ["simulate", "--config", str(first / "config.yaml"),
                                     "--out", str(again)])
    assert rerun.exit_code == 0, rerun.output
    assert (again / "jobs.csv").read_text() == (first / "jobs.csv").read_text()
