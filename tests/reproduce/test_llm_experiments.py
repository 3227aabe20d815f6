"""The LLM case studies: ``dlsched reproduce megatron-lm`` and ``llama3-405b``."""

from __future__ import annotations

import pytest

from dlsched.reproduce.experiments.llama3_405b import measured, simulate_case
from dlsched.reproduce.registry import ExperimentOptions, get_experiment
from dlsched.reproduce.runner import run_experiment


def test_megatron_lm_rows_within_published_bounds() -> None:
    experiment = get_experiment("megatron-lm")
    rows = run_experiment(experiment, ExperimentOptions(experiment.cases, ()))
    by_key = {(r.case, r.metric): r for r in rows}
    assert abs(by_key[("megatron-1t", "pflops")].rel_diff) < 0.10
    others = [r for r in rows if r.reference is not None and r.case != "megatron-1t"
              and r.case != "megatron-1.7b"]
    assert len(others) >= 4 and all(abs(r.rel_diff) < 0.15 for r in others)


def test_llama3_405b_54_days_interruptions_and_ettr() -> None:
    """Done means of issue 17: 419 +-10% unexpected interruptions; ETTR > 90% with Young's
    interval (the 4x-too-long interval's lower ETTR is in docs/llm.md: it doubles the run)."""
    values = {m.metric: m.value for m in measured("young", simulate_case("young", 0))}
    assert abs(values["unexpected_interruptions"] - 419) <= 41.9
    assert values["ettr"] > 0.90
    assert values["lost_gpu_hours"] > 0


def test_llama3_tenants_reports_both_sides() -> None:
    """The case study beside a research tenant (a quarter of a day, few research jobs)."""
    from dlsched.reproduce.experiments.llama3_tenants import (
        CASES,
        case_policy,
        research_side,
        simulate_tenants,
    )

    assert case_policy("restart") == ("young", "restart", 16) and "elastic-s0" in CASES
    result = simulate_tenants("elastic-s0", 0, days=0.25, rate=4.0)
    rows = {m.metric: m.value for m in research_side("elastic-s0", result, "elastic")}
    assert 0 < rows["research_jobs"] <= 24 and rows["research_finished"] is not None  # arrived
    llm = {m.metric: m.value for m in measured("elastic-s0", result, "elastic")}
    assert llm["ettr"] is not None and 0 < llm["ettr"] <= 1


def test_llama3_tenants_without_research_jobs() -> None:
    """``--opt research_rate=0`` (the pre-training job beside an idle tenant) was a
    'ValueError: rate_per_hour must be > 0' traceback."""
    experiment = get_experiment("llama3-405b-tenants")
    rows = run_experiment(experiment, ExperimentOptions(
        ("restart",), (), options={"days": "0.25", "research_rate": "0"}))
    by_metric = {r.metric: r.dlsched for r in rows}
    assert by_metric["research_jobs"] == 0 and by_metric["research_jct_mean_h"] is None
    assert by_metric["ettr"] is not None and by_metric["ettr"] > 0
    # the quarter day's wall time at that ETTR (it read 54 / ETTR whatever --opt days said)
    assert by_metric["wall_days"] == pytest.approx(0.25 / by_metric["ettr"])
