"""Gavel's round and Sia's ILP budget GPU types per node pool (``gavel/pool_budget.py``,
``elastic/sia_pools.py``): counted over the whole cluster, a pooled job was given a type whose
room was only in another pool and sat unplaced while its own pool had room."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pytest
from builders import cluster_of, make_cluster, make_job, records_of, simulator

from dlsched.cluster.cluster import Node
from dlsched.policies.gavel.assign import Entry, assign_types
from dlsched.policies.gavel.pool_budget import PoolBudget
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import Job
from dlsched.workload.trace import Trace

# pool a: a V100 node; pool b: a K80 node. Gavel's LP sees a V100 free for a pool-b job.
V100_A_K80_B = cluster_of(Node("a0", "V100", 4, pool="a"), Node("b0", "K80", 4, pool="b"))


@pytest.mark.parametrize(("policy", "options"), [
    pytest.param("gavel-maxmin", {}, id="maxmin-paper-rounds"),
    pytest.param("gavel-las", {}, id="las-paper-rounds"),
    pytest.param("gavel-fifo", {}, id="fifo-paper-rounds"),
    pytest.param("gavel-maxmin", {"mechanism": "artifact"}, id="maxmin-artifact-rounds"),
    pytest.param("gavel-maxmin-packed", {}, id="packed-pairs"),
])
def test_gavel_runs_a_pool_b_job_on_its_pools_k80(policy: str, options: Mapping) -> None:
    """Was: every round gave the job a V100 (room 4 cluster-wide, all in pool a); the
    placement found no V100 in pool b, so it never ran."""
    job = replace(make_job("j0").gpus(1).work(10_000).pool("b").build(), model="ResNet-18",
                  batch_size=64)
    sim = Simulator(V100_A_K80_B, Trace("t", (job,), throughput="gavel"),
                    build_policy(policy, options), SimConfig(restart_overhead=0.0))
    records = records_of(sim, cycles=2_000)
    assert records["j0"].finish_time is not None
    assert {g for s in sim.core.segments.all() for g in s.gpus} <= {4, 5, 6, 7}


def test_assign_types_counts_each_pools_room() -> None:
    """Two 2-GPU jobs of pool a, one of pool b, V100 entries first: cluster-wide, pool b's job
    (highest priority) took 2 of the 4 V100s, all in pool a, and pushed a pool-a job onto
    the K80 of pool b; per pool, pool a's jobs share its V100 and pool b's job its K80."""
    v100, k80 = (V100_A_K80_B.type_names.index(name) for name in ("V100", "K80"))
    jobs = [Job(make_job(f"j{i}").gpus(2).pool(pool).build()) for i, pool in enumerate("baa")]
    entries = [Entry(10.0 - i, (0.0, f"j{i}"), f"j{i}", v100) for i in range(3)] + \
        [Entry(1.0, (0.0, f"j{i}"), f"j{i}", k80) for i in range(3)]
    workers, free = {f"j{i}": 2 for i in range(3)}, np.array([4, 4])
    assert assign_types(entries, workers, free) == {"j0": v100, "j1": v100, "j2": k80}
    budget = PoolBudget.of(V100_A_K80_B, jobs, np.array([4, 4]))
    assert assign_types(entries, workers, free, budget) == {"j1": v100, "j2": v100,
                                                            "j0": k80}


def test_no_budget_without_pooled_jobs() -> None:
    jobs = [Job(make_job("j0").gpus(1).build())]
    assert PoolBudget.of(V100_A_K80_B, jobs, np.array([4, 4])) is None


# one GPU type; pool a: 1 node of 4, pool b: 3 nodes of 4. Three elastic (1-4 GPUs) jobs of
# pool a, one rigid 4-GPU job of pool b: the ILP's one row of 16 GPUs gave each pool-a job 4
# (each within its pool's 4), the placement fitted one of them in pool a
SIA_POOLS = make_cluster(nodes=4, gpus=4, pools=["a", "b", "b", "b"])


def sia_jobs() -> list:
    return [*(make_job(f"a{i}").gpus(1).elastic(1, 4).work(3_600).pool("a").build()
              for i in range(3)), make_job("b0").gpus(4).work(3_600).pool("b").build()]


def test_sia_shares_pool_a_among_its_jobs() -> None:
    """Was: a0 on pool a's 4 GPUs, a1 and a2 unplaced in the first round (pool b had 8 idle
    GPUs); now a0 gets 2, a1 and a2 1 each."""
    sim = simulator("sia", SIA_POOLS, sia_jobs(), options={"profiles": "bundled",
                                                            "elastic": "declared"})
    records = records_of(sim, cycles=2_000)
    assert all(r.first_start == 0.0 for r in records.values())


def test_sia_rows_per_pool() -> None:
    from builders import cycle_state

    from dlsched.policies.elastic.sia_configs import Columns
    from dlsched.policies.elastic.sia_pools import pool_rows

    jobs = [Job(spec) for spec in sia_jobs()]
    state = cycle_state(SIA_POOLS, waiting=jobs)
    columns = Columns(np.arange(4), np.zeros(4, dtype=np.int64), np.full(4, 4),
                      np.zeros(4, dtype=bool), np.ones(4))
    by_pool = pool_rows(state, jobs, columns, np.array([4, 4, 4, 4]))
    assert by_pool is not None
    budgeted, rows = by_pool
    assert rows.tolist() == [16, 4, 12]  # no pool (the cluster), pool a, pool b
    assert budgeted.type_index.tolist() == [1, 1, 1, 2]
