"""Total wait (every wait of a job, after preemptions too) next to the first-start queueing
delay: a preempted job's later waits show in ``wait_total_*``, not in ``queueing_delay_*``."""

from __future__ import annotations

import pytest
from builders import make_cluster, make_job, simulator
from report_builders import hand_result, job

from dlsched.report.metrics import queueing_delays, summarize, total_waits
from dlsched.sim.result import JobRecord


def _preempted_record(run_seconds: float | None) -> JobRecord:
    """Submitted and started at 0, ran 50 s, preempted for 100 s, ran 50 s more: ends at 200."""
    record = job("A", 0.0, 0.0, 200.0, preemptions=1)
    return JobRecord(*[getattr(record, name) for name in record.__slots__[:14]],
                     run_seconds=run_seconds)


def test_hand_built_preemption_waits_100_seconds_after_starting_at_once() -> None:
    summary = summarize(hand_result([_preempted_record(100.0)], end_time=200.0))
    assert (summary.queueing_delay_mean, summary.queueing_delay_p99) == (0.0, 0.0)
    assert (summary.wait_total_mean, summary.wait_total_p99) == (100.0, 100.0)


def test_a_record_without_run_seconds_is_left_out() -> None:
    result = hand_result([_preempted_record(None)], end_time=200.0)
    assert total_waits(result) == []
    assert summarize(result).wait_total_mean is None


# One GPU, SRTF. A (200 s) runs from 0; B (100 s) arrives at 50 when A has 150 s left, preempts
# it and runs 50->150; A resumes at 150 and ends at 300. A: first start at once (delay 0), then
# 100 s preempted; B: no wait at all.
@pytest.mark.parametrize("keep_finished", [True, False], ids=["records", "columns"])
def test_simulated_preemption_counts_the_wait_after_it(keep_finished: bool) -> None:
    jobs = [make_job("A").at(0).work(200).build(), make_job("B").at(50).work(100).build()]
    sim = simulator("srtf", make_cluster(nodes=1, gpus=1), jobs, keep_finished=keep_finished)
    result = sim.run()
    records = {r.job_id: r for r in result.jobs}
    assert (records["A"].preemptions, records["A"].finish_time) == (1, 300.0)
    assert (records["A"].run_seconds, records["B"].run_seconds) == (200.0, 100.0)
    assert queueing_delays(result) == [0.0, 0.0]
    assert total_waits(result) == [100.0, 0.0]
    summary = summarize(result)
    assert (summary.queueing_delay_mean, summary.wait_total_mean) == (0.0, 50.0)


def test_run_seconds_stays_out_of_the_records_repr() -> None:
    """The benchmarks' schedule digests hash ``repr(record)``: the new field must not move them."""
    assert "run_seconds" not in repr(_preempted_record(100.0))
