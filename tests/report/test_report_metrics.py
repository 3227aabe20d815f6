"""Summary metrics against answers computed by hand."""

from __future__ import annotations

import json

import pytest
from report_builders import CONTRACT_KEYS, ELASTIC_KEYS, FAIRNESS_KEYS, hand_result, job, run_tiny

from dlsched.report.metrics import (
    Summary,
    jct_by_queue,
    summarize,
    timeline_integral,
    utilization,
)


def test_fifo_tiny_by_hand() -> None:
    # a (8 GPUs) runs 0-100; b and c start at 100; d waits for b and runs 110-115; c ends at 150.
    # JCTs 100, 109, 148, 112; delays 0, 99, 98, 107.
    summary = summarize(run_tiny("fifo"))
    assert (summary.policy, summary.trace, summary.cluster) == ("fifo", "tiny", "two-nodes")
    assert (summary.jobs_submitted, summary.jobs_finished, summary.jobs_unfinished) == (4, 4, 0)
    assert summary.jct_mean == pytest.approx(117.25)
    assert summary.jct_median == pytest.approx(110.5)  # (109 + 112) / 2
    assert summary.jct_p95 == pytest.approx(142.6)  # rank 2.85: 112 + 0.85 * 36
    assert summary.jct_p99 == pytest.approx(146.92)  # rank 2.97: 112 + 0.97 * 36
    assert summary.queueing_delay_mean == pytest.approx(76.0)
    assert summary.queueing_delay_p99 == pytest.approx(106.76)  # rank 2.97: 99 + 0.97 * 8
    assert summary.makespan == pytest.approx(150.0)
    # 8x100 + 8x10 + 5x5 + 4x35 = 1045 GPU-seconds over 8 GPUs x 150 s.
    assert summary.utilization == pytest.approx(1045 / 1200)
    assert summary.gpu_hours == pytest.approx(1045 / 3600)
    assert summary.preemptions == 0
    assert summary.restart_overhead == 0.0


def test_sjf_tiny_by_hand() -> None:
    # d (5 s) goes before c at 100: JCTs 100, 109, 153, 102; c ends at 155.
    summary = summarize(run_tiny("sjf"))
    assert summary.jct_mean == pytest.approx(116.0)
    assert summary.makespan == pytest.approx(155.0)
    # 8x100 + 5x5 + 8x5 + 4x45 = 1045 GPU-seconds over 8 x 155.
    assert summary.utilization == pytest.approx(1045 / 1240)


INTEGRALS = [
    ("whole", (0, 10, 20), (2, 4, 0), 0, 20, 60.0),
    ("window-inside", (0, 10, 20), (2, 4, 0), 5, 15, 30.0),
    ("zero-before-first", (10,), (3,), 0, 20, 30.0),
    ("last-value-holds", (0, 10), (1, 2), 0, 30, 50.0),
    ("empty", (), (), 0, 10, 0.0),
    ("empty-window", (0,), (5,), 3, 3, 0.0),
]


@pytest.mark.parametrize(("times", "values", "start", "end", "expected"),
                         [case[1:] for case in INTEGRALS], ids=[case[0] for case in INTEGRALS])
def test_timeline_integral(times: tuple[float, ...], values: tuple[float, ...], start: float,
                           end: float, expected: float) -> None:
    assert timeline_integral(times, values, start, end) == pytest.approx(expected)


def test_utilization_of_hand_timeline() -> None:
    # 4 GPUs; 2 used over [0, 10), 4 over [10, 20): 60 of 80 GPU-seconds.
    result = hand_result([job("x", 0, 0, 20, gpus=2), job("y", 10, 10, 20, gpus=2)],
                         times=(0, 10, 20), used=(2, 4, 0), end_time=20)
    assert utilization(result) == pytest.approx(0.75)


def test_unfinished_jobs_extend_the_window_to_the_end() -> None:
    result = hand_result([job("x", 0, 0, 10), job("y", 0, 0, None)],
                         times=(0, 10), used=(2, 1), total_gpus=2, end_time=30)
    summary = summarize(result)
    assert (summary.jobs_finished, summary.jobs_unfinished) == (1, 1)
    assert summary.makespan == pytest.approx(10.0)
    assert summary.utilization == pytest.approx((2 * 10 + 1 * 20) / (2 * 30))


def test_no_finished_jobs_gives_none_and_valid_json() -> None:
    summary = summarize(hand_result([job("x", 5, None, None)], end_time=5))
    assert summary.jct_mean is None and summary.jct_p99 is None and summary.makespan is None
    assert summary.queueing_delay_mean is None and summary.utilization is None
    assert summary.cycle_ms_mean is None
    json.dumps(summary.to_dict(), allow_nan=False)


def test_to_dict_has_the_contract_keys() -> None:
    data = summarize(run_tiny("fifo")).to_dict()
    assert set(data) == CONTRACT_KEYS | FAIRNESS_KEYS | ELASTIC_KEYS
    assert data["policy_options"] == {}
    json.dumps(data, allow_nan=False)


def test_to_dict_turns_nan_into_none() -> None:
    summary = summarize(hand_result([job("x", 0, 0, 10)], times=(0,), used=(1,)))
    broken = Summary(**{**summary.__dict__, "jct_mean": float("nan")})
    assert broken.to_dict()["jct_mean"] is None


def test_jct_by_queue() -> None:
    result = hand_result([job("a", 0, 0, 10, queue="team-b"), job("b", 0, 5, 30, queue="team-b"),
                          job("c", 2, 2, 6, queue="team-a"), job("d", 0, None, None, "team-c")])
    assert jct_by_queue(result) == {"team-a": 4.0, "team-b": 20.0}
