"""FIFO golden tests: strict head-of-line blocking, the greedy (strict=false) variant, ties."""

from __future__ import annotations

import pytest
from builders import Row, assert_schedule, make_cluster, make_job, run

from dlsched.workload.job import JobSpec


def _trace(c_queue: str = "default") -> list[JobSpec]:
    return [
        make_job("A").gpus(2).at(0).work(100).build(),
        make_job("B").gpus(4).at(1).work(50).build(),
        make_job("C").gpus(1).at(2).work(10).queue(c_queue).build(),
    ]


# One node, 4 GPUs. A takes 2 GPUs 0->100. B (4 GPUs) arrives at 1 and cannot fit.
# strict: C (1 GPU, fits in A's spare 2) waits behind B; B starts when A ends, 100->150;
#   C needs B's GPUs, so 150->160 (JCT 160-2=158).
# strict=false: C skips the blocked B and runs 2->12; B still starts at 100.
# strict, C in another tenant queue: strict FIFO blocks only B's queue, so C runs 2->12.
CASES = [
    ("strict", {}, "default", [("A", 0, 100, 100), ("B", 100, 150, 149), ("C", 150, 160, 158)]),
    ("not-strict", {"strict": "false"}, "default",
     [("A", 0, 100, 100), ("B", 100, 150, 149), ("C", 2, 12, 10)]),
    ("strict-other-queue", {}, "b", [("A", 0, 100, 100), ("B", 100, 150, 149), ("C", 2, 12, 10)]),
]


@pytest.mark.parametrize(("options", "c_queue", "table"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_fifo_golden(options: dict[str, str], c_queue: str, table: list[Row]) -> None:
    records = run("fifo", make_cluster(nodes=1, gpus=4), _trace(c_queue), options=options)
    assert_schedule(records, table)
    assert all(r.preemptions == 0 for r in records.values())


def test_strict_fifo_says_who_blocks() -> None:
    # Stopped at t=50: C waits although it fits, and says why.
    records = run("fifo", make_cluster(nodes=1, gpus=4), _trace(), max_time=50)
    assert records["C"].status == "pending"
    assert records["C"].pending_reason == "waiting behind B (strict FIFO)"


# One GPU, two 10 s jobs submitted together: equal submit times break ties by job id, whatever
# the input order: a 0->10, b 10->20.
@pytest.mark.parametrize("ids", [("a", "b"), ("b", "a")], ids=["sorted", "reversed"])
def test_same_submit_time_ties_break_by_id(ids: tuple[str, str]) -> None:
    jobs = [make_job(job_id).work(10).build() for job_id in ids]
    records = run("fifo", make_cluster(nodes=1, gpus=1), jobs)
    assert_schedule(records, [("a", 0, 10, 10), ("b", 10, 20, 20)])
