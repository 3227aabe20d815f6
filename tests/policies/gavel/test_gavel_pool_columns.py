"""Gavel's LPs per (pool, type) on a cluster whose node pools bind the jobs
(``gavel/pool_columns.py``): with one capacity row per type counted cluster-wide, a job was
given time on a type its pool lacks, and its effective throughput (the LP's objective) counted
GPUs it could never use."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from builders import cluster_of, make_job, records_of

from dlsched.cluster.cluster import Node
from dlsched.policies.gavel.efficiency import fifo_hetero, min_makespan
from dlsched.policies.gavel.fairness import las, max_min_fairness, weighted_fairness
from dlsched.policies.gavel.ftf import finish_time_fairness
from dlsched.policies.gavel.inputs import from_gavel
from dlsched.policies.gavel.objectives import POLICIES
from dlsched.policies.gavel.packed import max_min_fairness_packed
from dlsched.policies.gavel.pool_columns import pool_columns
from dlsched.policies.gavel.pop import solve_with_pop
from dlsched.policies.gavel.problem import AllocationProblem, effective_throughput, violations
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.trace import Trace

# pool a: 2 V100 (node a0); pool b: 2 K80 (node b0). Types in the cluster's order: K80, V100.
TWO_POOLS = cluster_of(Node("a0", "V100", 2, pool="a"), Node("b0", "K80", 2, pool="b"))
K80, V100 = 0, 1
SPEED = (1.0, 3.0)  # steps/s on K80, V100


def problem(pools: list[str | None], cluster=TWO_POOLS, pooled: bool = True,
            **extra: object) -> AllocationProblem:
    """Jobs of the pools ``pools`` (1 GPU each, ``SPEED``), the cluster's type counts, and
    the (pool, type) columns when ``pooled``."""
    n = len(pools)
    counts = cluster.gpus_by_type()
    made = AllocationProblem(
        tuple(f"j{i}" for i in range(n)), cluster.type_names,
        np.array([float(counts[t]) for t in cluster.type_names]), np.array([SPEED] * n),
        np.ones(n), remaining=np.full(n, 1_000.0), elapsed=np.zeros(n), attained=np.zeros(n),
        **extra)
    if not pooled:
        return made
    return dataclasses.replace(made, pools=pool_columns(cluster, pools))


def per_column(case: AllocationProblem, x: np.ndarray) -> np.ndarray:
    """GPUs used in each (pool, type) column, for jobs that each may use one pool."""
    allowed = case.pools.allowed
    used = np.zeros(len(case.pools.capacity))
    for j, row in enumerate(x):
        for c in np.flatnonzero(allowed[j]):
            used[c] += row[case.pools.column_type[c]] * case.scale[j]
    return used


def test_columns_per_pool_of_the_jobs_and_one_for_the_other_nodes() -> None:
    """Groups: each pool with jobs, then every other node (pool c has no job here: its
    V100 joins the free K80 node's group), which only the job without a pool may use."""
    cluster = cluster_of(Node("a0", "V100", 2, pool="a"), Node("b0", "K80", 2, pool="b"),
                         Node("c0", "V100", 4, pool="c"), Node("n0", "K80", 1))
    columns = pool_columns(cluster, ["b", "a", None])
    assert columns.column_group == ("a", "b", None, None)
    assert columns.column_type.tolist() == [V100, K80, K80, V100]
    assert columns.capacity.tolist() == [2.0, 2.0, 1.0, 4.0]
    assert columns.allowed.tolist() == [[False, True, False, False],
                                        [True, False, False, False],
                                        [True, True, True, True]]
    only_a = pool_columns(cluster, ["a", "a"])
    assert (only_a.column_group, only_a.capacity.tolist()) == (("a",), [2.0])


def test_no_columns_without_bound_pools() -> None:
    assert pool_columns(TWO_POOLS, [None, "elsewhere"]) is None
    assert pool_columns(cluster_of(Node("n0", "V100", 2)), ["a"]) is None


# Three pool-a jobs, one pool-b job. Cluster-wide every job got throughput 2 (the pool-b job
# half on V100, the others half on K80); per pool, pool a's jobs share its 2 V100 (2/3 each,
# throughput 2) and pool b's job has its K80 alone (time 1, throughput 1: the bottleneck).
BY_HAND = np.array([[0.0, 2 / 3]] * 3 + [[1.0, 0.0]])


@pytest.mark.parametrize("policy", [
    pytest.param(max_min_fairness, id="max-min"),
    pytest.param(lambda p: max_min_fairness(p, heterogeneity_aware=False), id="agnostic"),
    pytest.param(las, id="las"),
    pytest.param(finish_time_fairness, id="ftf"),
    pytest.param(min_makespan, id="makespan"),
    pytest.param(weighted_fairness, id="weighted"),
])
def test_pool_b_job_gets_no_v100_time(policy) -> None:
    """Was: the pool-b job had X[V100] = 0.5 and pool a's jobs X[K80] = 0.5."""
    extra = {"tenant": np.array([0, 0, 0, 1]), "tenant_weights": np.array([1.0, 3.0])}
    case = problem(["a", "a", "a", "b"], **extra)
    result = policy(case)
    assert result.x == pytest.approx(BY_HAND, abs=1e-6)
    assert effective_throughput(case, result) == pytest.approx([2.0, 2.0, 2.0, 1.0])
    assert violations(case, result) == []


def test_max_min_objective_by_hand() -> None:
    """Normalizer: X^equal over the cluster (1 GPU each, spread 2:2 over K80 and V100), 2
    steps/s for every job; the pool-b job reaches 1 of it: 0.5 (cluster-wide LP: 1.0). LAS
    (no service yet, 360 s rounds): 360 s at half the cluster-average GPU's rate, 180."""
    case = problem(["a", "a", "a", "b"])
    assert max_min_fairness(case).objective == pytest.approx(0.5)
    assert las(case).objective == pytest.approx(180.0)
    assert max_min_fairness(problem(["a", "a", "a", "b"], pooled=False)).objective == \
        pytest.approx(1.0)


def test_fifo_stops_only_its_own_pools_queue() -> None:
    """The third pool-a job fits nowhere in pool a; pool b's job after it still takes its
    K80 (cluster-wide: the pool-a job was given pool b's K80)."""
    result = fifo_hetero(problem(["a", "a", "a", "b"]))
    assert result.x.tolist() == [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0]]
    assert fifo_hetero(problem(["a", "a", "a", "b"], pooled=False)).x[2].tolist() == [1.0, 0.0]


# pool a: 2 V100; a node outside any pool: 2 K80. Three pool-a jobs and one without a pool,
# which may use both. Max-min: it takes k of K80 and y of V100 (k + y <= 1), pool a's jobs
# share 2 - y of V100: k + 3y = 3 (2 - y) / 3 at k = 1 - y gives y = 1/3 and every job 5/3
# steps/s; the sum stage cannot move it (y <= 1/3 for pool a, y >= 1/3 for the free job).
MIXED = cluster_of(Node("a0", "V100", 2, pool="a"), Node("n0", "K80", 2))


@pytest.mark.parametrize("policy", [max_min_fairness, las], ids=["max-min", "las"])
def test_a_job_without_a_pool_shares_the_pools_v100(policy) -> None:
    case = problem(["a", "a", "a", None], cluster=MIXED)
    result = policy(case)
    assert result.x == pytest.approx(np.array([[0.0, 5 / 9]] * 3 + [[2 / 3, 1 / 3]]), abs=1e-6)
    assert effective_throughput(case, result) == pytest.approx([5 / 3] * 4)


def _options(name: str) -> dict:
    return {"prices": [0.9, 3.06]} if name == "min_cost" else {}


def random_pooled(seed: int) -> AllocationProblem:
    """Three pools of mixed types and 24 jobs of random pools, speeds and sizes."""
    rng = np.random.default_rng(seed)
    cluster = cluster_of(Node("a0", "V100", 4, pool="a"), Node("a1", "K80", 2, pool="a"),
                         Node("b0", "K80", 8, pool="b"), Node("c0", "V100", 2, pool="c"))
    pools = rng.choice(["a", "b", "c"], size=24).tolist()
    counts = cluster.gpus_by_type()
    speed = rng.uniform(0.5, 4.0, size=(24, 2))
    made = AllocationProblem(
        tuple(f"j{i}" for i in range(24)), cluster.type_names,
        np.array([float(counts[t]) for t in cluster.type_names]), speed,
        rng.choice([1.0, 2.0], size=24), remaining=rng.uniform(1e3, 1e5, size=24),
        elapsed=rng.uniform(0, 1e3, size=24), attained=rng.uniform(0, 1e4, size=24),
        tenant=rng.integers(0, 2, size=24), tenant_weights=np.array([1.0, 2.0]))
    return dataclasses.replace(made, pools=pool_columns(cluster, pools))


@pytest.mark.parametrize("name", sorted(set(POLICIES) - {"max_min_fairness_packed"}))
@pytest.mark.parametrize("seed", range(3))
def test_every_policy_keeps_each_pools_capacity(name: str, seed: int) -> None:
    case = random_pooled(seed)
    for result in (POLICIES[name](case, **_options(name)),
                   solve_with_pop(POLICIES[name], case, k=2, seed=seed, **_options(name))):
        assert violations(case, result) == []
        assert np.all(per_column(case, result.x) <= case.pools.capacity + 1e-6)


def test_packed_pairs_share_only_within_a_pool() -> None:
    """Space sharing per (pool, type): every pair is of one pool, and single and shared time
    keep each pool's GPUs of each type."""
    specs = [dataclasses.replace(make_job(f"j{i}").gpus(1).work(10_000).build(),
                                 model=model, batch_size=batch)
             for i, (model, batch) in enumerate([("ResNet-18", 64), ("LM", 20)] * 4)]
    cluster = cluster_of(Node("a0", "V100", 2, pool="a"), Node("b0", "K80", 1, pool="b"),
                         Node("b1", "V100", 1, pool="b"))
    pools = ["a", "a", "b", "b", "a", "a", "b", "b"]
    case = from_gavel(specs, cluster.gpus_by_type())
    case = dataclasses.replace(case, pools=pool_columns(cluster, pools))
    result = max_min_fairness_packed(case)
    assert violations(case, result) == []
    assert all(pools[a] == pools[b] for a, b in result.pairs.tolist())
    used = per_column(case, result.x)
    for (a, _), shared in zip(result.pairs.tolist(), result.pair_x, strict=True):
        for c in np.flatnonzero(case.pools.allowed[a]):
            used[c] += shared[case.pools.column_type[c]]
    assert np.all(used <= case.pools.capacity + 1e-6)


def test_min_cost_buys_only_types_of_the_jobs_pools() -> None:
    """K80 gives the most steps per dollar (1 / 0.9 against 3 / 3.06): the cost LP puts work
    there alone. Cluster-wide it bought pool b's K80 for pool a's jobs; per pool only the
    pool-b job may use it."""
    prices = [0.9, 3.06]
    result = POLICIES["min_cost"](problem(["a", "a", "a", "b"]), prices=prices)
    assert result.x[:3].sum() == 0.0 and result.x[3, V100] == 0.0 and result.x[3, K80] > 0
    wide = POLICIES["min_cost"](problem(["a", "a", "a", "b"], pooled=False), prices=prices)
    assert wide.x[:3, K80].sum() > 0


@pytest.mark.parametrize(("policy", "options"), [
    pytest.param("gavel-maxmin", {}, id="maxmin"),
    pytest.param("gavel-maxmin", {"mechanism": "artifact"}, id="maxmin-artifact"),
    pytest.param("gavel-las", {}, id="las"),
    pytest.param("gavel-ftf", {}, id="ftf"),
    pytest.param("gavel-fifo", {}, id="fifo"),
])
def test_rounds_solve_per_pool(policy: str, options: dict) -> None:
    """Every X the rounds solve gives pool a's jobs no K80 (pool b's) and pool b's job no
    V100 (pool a's); was: both, from the cluster-wide capacity rows."""
    specs = [dataclasses.replace(make_job(f"j{i}").gpus(1).work(20_000).pool(pool).build(),
                                 model="ResNet-18", batch_size=64)
             for i, pool in enumerate("aaab")]
    sim = Simulator(TWO_POOLS, Trace("t", tuple(specs), throughput="gavel"),
                    build_policy(policy, options), SimConfig(restart_overhead=0.0))
    rounds = sim.profile.plugins[0]
    solved = []
    store = rounds._store

    def keep(problem, allocation):
        solved.append(dict(zip(problem.job_ids, allocation.x.tolist(), strict=True)))
        store(problem, allocation)

    rounds._store = keep
    records = records_of(sim, cycles=2_000)
    assert all(record.finish_time is not None for record in records.values())
    assert solved
    for x in solved:
        assert all(x[j][K80] == 0.0 for j in ("j0", "j1", "j2") if j in x)
        assert "j3" not in x or x["j3"][V100] == 0.0


def test_warm_start_forgets_bases_of_other_columns() -> None:
    """Kept bases are by column index; per (pool, type) an index means another column once
    the pools with jobs change, so the bases go (was: read as the new LP's columns)."""
    from dlsched.policies.gavel.lp import WarmStart

    warm = WarmStart()
    first = max_min_fairness(problem(["a", "a", "a", "b"]), warm=warm)
    assert warm.first.index and first.x == pytest.approx(BY_HAND, abs=1e-6)
    kept = warm.first
    again = max_min_fairness(problem(["a", "a", "b", "b"]), warm=warm)
    assert warm.first is kept  # the same columns: the bases stay
    assert again.x[:, V100] == pytest.approx([1.0, 1.0, 0.0, 0.0], abs=1e-6)
    max_min_fairness(problem(["a", "a", "a", "a"]), warm=warm)
    assert warm.first is not kept


def test_violations_name_time_outside_the_pool() -> None:
    """The cluster-wide allocation, checked against the (pool, type) columns."""
    case = problem(["a", "a", "a", "b"])
    wide = max_min_fairness(problem(["a", "a", "a", "b"], pooled=False))
    assert violations(case, wide) == ["time on a GPU type the job's pool does not have"]
    crowded = dataclasses.replace(max_min_fairness(case), x=np.array([[0.0, 1.0]] * 3
                                                                      + [[1.0, 0.0]]))
    assert violations(case, crowded) == ["V100: 3.0000 GPUs used of 2.0",
                                         "a/V100: 3.0000 GPUs used of 2.0"]
