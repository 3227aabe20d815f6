"""EASY backfill golden tests: a short job backfills without delaying the head, a long one does
not, and the head starts exactly at its shadow time."""

from __future__ import annotations

import pytest
from builders import Row, assert_schedule, make_cluster, make_job, run

from dlsched.workload.job import JobSpec


def _trace(head_gpus: int, c_gpus: int, c_work: float) -> list[JobSpec]:
    return [make_job("A").gpus(2).at(0).work(100).build(),
            make_job("B").gpus(head_gpus).at(1).work(50).build(),
            make_job("C").gpus(c_gpus).at(2).work(c_work).build()]


# One node, 4 GPUs. A (2 GPUs) runs 0->100. B (the head) cannot fit at 1; its shadow time is
# A's end, 100, when 4 GPUs are free: extra = 4 - B's GPUs.
# short: C (2 GPUs, 50 s) would end at 52 <= 100, so it backfills: 2->52. B starts at its shadow
#   time: 100->150.
# long: C (2 GPUs, 200 s) would end at 202 > 100 and needs 2 > extra 0: it waits. B 100->150,
#   then C 150->350 (JCT 348).
# extra: B needs 3 GPUs, so extra = 1; C (1 GPU, 500 s) ends after the shadow time but fits in
#   the extra GPU: it backfills 2->502, and B still starts at 100 on the 3 other GPUs.
CASES = [
    ("short-job-backfills", (4, 2, 50),
     [("A", 0, 100, 100), ("B", 100, 150, 149), ("C", 2, 52, 50)]),
    ("long-job-waits", (4, 2, 200),
     [("A", 0, 100, 100), ("B", 100, 150, 149), ("C", 150, 350, 348)]),
    ("long-job-in-extra-gpus", (3, 1, 500),
     [("A", 0, 100, 100), ("B", 100, 150, 149), ("C", 2, 502, 500)]),
    # C (2 GPUs, 98 s) ends at 100, exactly the shadow time: it frees its GPUs as B needs them,
    # so it backfills 2->100 and B still starts at 100.
    ("job-ending-at-the-shadow-time-backfills", (4, 2, 98),
     [("A", 0, 100, 100), ("B", 100, 150, 149), ("C", 2, 100, 98)]),
]


@pytest.mark.parametrize(("shape", "table"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_backfill_golden(shape: tuple[int, int, float], table: list[Row]) -> None:
    records = run("backfill", make_cluster(nodes=1, gpus=4), _trace(*shape))
    assert_schedule(records, table)
    assert records["B"].first_start == 100.0  # exactly the shadow time


def test_blocked_job_names_the_reservation() -> None:
    # Stopped at 50: C waits for the head's reservation at t=100 (A's end).
    records = run("backfill", make_cluster(nodes=1, gpus=4), _trace(4, 2, 200), max_time=50)
    assert records["C"].status == "pending"
    assert "would delay B" in records["C"].pending_reason
    assert "reserved at t=100" in records["C"].pending_reason


# The same "long" trace under greedy FIFO (strict=false): C jumps ahead at 2 and holds 2 GPUs
# until 202, so the head B is delayed past its shadow time: 202->252. EASY prevents exactly that.
def test_greedy_fifo_delays_the_head_easy_does_not() -> None:
    cluster = make_cluster(nodes=1, gpus=4)
    greedy = run("fifo", cluster, _trace(4, 2, 200), options={"strict": "false"})
    assert_schedule(greedy, [("A", 0, 100, 100), ("B", 202, 252, 251), ("C", 2, 202, 200)])
    easy = run("backfill", cluster, _trace(4, 2, 200))
    assert easy["B"].first_start == 100.0


# Six GPUs: X and Y (2 GPUs each) both end at 100; the head H (4 GPUs) is stuck at 1. Its shadow
# time is 100, and at 100 both X and Y have ended: 6 GPUs free, so the extra GPUs are 6 - 4 = 2
# (Mu'alem & Feitelson, TPDS 2001 §2: extra = nodes free at the shadow time less the head's).
# C (2 GPUs, 500 s) runs past the shadow time but fits in those extra GPUs: it backfills 2->502,
# and H still starts at 100 on X's and Y's GPUs. Counting only X's GPUs (enough for H) gave
# extra 0 and held C back to 100.
def test_jobs_ending_at_the_shadow_time_all_count_towards_the_extra_gpus() -> None:
    jobs = [make_job("X").gpus(2).at(0).work(100).build(),
            make_job("Y").gpus(2).at(0).work(100).build(),
            make_job("H").gpus(4).at(1).work(50).build(),
            make_job("C").gpus(2).at(2).work(500).build()]
    records = run("backfill", make_cluster(nodes=1, gpus=6), jobs)
    assert_schedule(records, [("X", 0, 100, 100), ("Y", 0, 100, 100), ("H", 100, 150, 149),
                              ("C", 2, 502, 500)])
