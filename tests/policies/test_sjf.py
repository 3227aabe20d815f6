"""SJF golden tests: oracle-duration order, no preemption, skipping jobs that do not fit."""

from __future__ import annotations

import pytest
from builders import Row, assert_schedule, make_cluster, make_job, run

from dlsched.workload.job import JobSpec

# One GPU. A (100 s) is alone at 0 and runs 0->100; the shorter jobs arriving later do not
# preempt it. At 100 the waiting jobs go shortest first: C (10) 100->110, D (30) 110->140,
# B (50) 140->190. JCTs: B 190-1=189, C 110-2=108, D 140-3=137.
ONE_GPU = (
    [make_job("A").at(0).work(100).build(), make_job("B").at(1).work(50).build(),
     make_job("C").at(2).work(10).build(), make_job("D").at(3).work(30).build()],
    [("A", 0, 100, 100), ("B", 140, 190, 189), ("C", 100, 110, 108), ("D", 110, 140, 137)],
)

# One GPU, equal durations (30 s): ties go to the earlier submission, then the lower id.
# A 0->100; then D (at 3) 100->130, E (at 5) 130->160, F (at 5) 160->190.
# JCTs: D 130-3=127, E 160-5=155, F 190-5=185.
TIES = (
    [make_job("A").at(0).work(100).build(), make_job("F").at(5).work(30).build(),
     make_job("E").at(5).work(30).build(), make_job("D").at(3).work(30).build()],
    [("A", 0, 100, 100), ("D", 100, 130, 127), ("E", 130, 160, 155), ("F", 160, 190, 185)],
)

# One node, 4 GPUs. A (2 GPUs, 100 s) runs 0->100. At 2 the order is B (10 s, 4 GPUs) then C
# (50 s, 2 GPUs): B does not fit and is skipped, C fits in A's spare GPUs and runs 2->52.
# B starts when A frees its GPUs: 100->110 (JCT 109).
SKIP = (
    [make_job("A").gpus(2).at(0).work(100).build(), make_job("B").gpus(4).at(1).work(10).build(),
     make_job("C").gpus(2).at(2).work(50).build()],
    [("A", 0, 100, 100), ("B", 100, 110, 109), ("C", 2, 52, 50)],
)


@pytest.mark.parametrize(("cluster_gpus", "case"), [(1, ONE_GPU), (1, TIES), (4, SKIP)],
                         ids=["shortest-first-no-preemption", "ties-by-submit-then-id",
                              "skips-job-that-does-not-fit"])
def test_sjf_golden(cluster_gpus: int, case: tuple[list[JobSpec], list[Row]]) -> None:
    jobs, table = case
    records = run("sjf", make_cluster(nodes=1, gpus=cluster_gpus), jobs)
    assert_schedule(records, table)
    assert all(r.preemptions == 0 for r in records.values())
