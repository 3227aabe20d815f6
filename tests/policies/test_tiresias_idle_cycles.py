"""A Tiresias cycle that starts and stops nothing still decides what later cycles record.

Issue 14 asked whether such cycles (a fifth of a contended Philly run's) could be skipped. A
cycle that fails a job by its victim search leaves the job's futility memo (``cycle._try_job``:
"nothing changed on its nodes since it last failed"); the next cycle passes that job over with
its old reason, and a memo's pass is not a known miss, so the jobs behind it are still tried.
Without the memo the job is searched again, fails, and the jobs as large behind it are
dropped unseen with the bucket's reason. So skipping the first cycle changes the reason the
second one records, and jobs.csv with it (``benchmarks/RESULTS.md``, session 32, helper T1:
measured on the Philly table). Here by hand: eight GPUs held by a job of queue 0, so no one
waiting has victims; a 2-GPU job arrives at 2 s (its cycle decides nothing), a 4-GPU job at 3 s.
"""

from __future__ import annotations

from unittest import mock

import pytest
from builders import make_cluster, make_job, records_of, simulator

from dlsched.scheduling import preempt_lane

NO_ROOM = "[placement] needs {} GPUs, none free on fitting nodes"


@pytest.mark.parametrize("lane", [True, False], ids=["lane", "full-cycle"])
def test_a_cycle_that_decides_nothing_still_sets_later_reasons(lane: bool) -> None:
    jobs = [make_job("holder").gpus(8).at(0).work(8e6).build(),
            make_job("two").gpus(2).at(2).work(100).build(),
            make_job("four").gpus(4).at(3).work(100).build()]
    sim = simulator("tiresias", make_cluster(nodes=1, gpus=8), jobs,
                    options={"promote_knob": 2, "thresholds": (1e9,)}, max_time=4.0)
    decide = preempt_lane.TiresiasLane.decide
    decided: list[bool] = []

    def deciding(self: preempt_lane.TiresiasLane, snapshot: object) -> object:
        result = decide(self, snapshot)  # type: ignore[arg-type]
        decided.append(result is not None)
        return result

    with (mock.patch.object(preempt_lane, "ENABLED", lane),
          mock.patch.object(preempt_lane.TiresiasLane, "decide", deciding)):
        records = records_of(sim)
    # At 3 s "two" is passed over by its memo from the 2 s cycle, so "four" is tried: it
    # fails by its own count. Had the 2 s cycle been skipped, "two" would fail by a search
    # at 3 s and "four" would read "a job as large or smaller ... did not fit".
    # (then which running jobs it may not preempt: read with the reason, not a cycle's)
    assert records["two"].pending_reason.split("; [tiresias]")[0] == NO_ROOM.format(2)
    assert records["four"].pending_reason.split("; [tiresias]")[0] == NO_ROOM.format(4)
    assert sim.core.cycles == 3  # at 0, 2 and 3 s: none skipped
    assert decided == ([True] * 3 if lane else [])
