"""AFS (NSDI'21 §3): the AFS-L pairwise rule on two-job cases computed by hand, and allocate()."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job

from dlsched.perf.model import Placement
from dlsched.policies.elastic.afs_rule import afs_allocate
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job, JobSpec


class Table:
    """Throughput per job id and worker count."""

    name = "table"

    def __init__(self, rates: dict[str, list[float]]) -> None:
        self.rates = rates

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        table = self.rates[spec.job_id]
        return table[min(placement.num_workers, len(table) - 1)]

    def reference_rate(self, spec: JobSpec) -> float:
        return 1.0


def afs(state: CycleState, **options: str) -> dict[str, int]:
    profile = build_policy("afs", options)
    return {k: v.num_workers for k, v in profile.plugins[0].allocate(state).items()}


# Short job a (length 10 on one GPU), long job b (length 100, linear). Hand-run of the rule
# "b wins iff (t_b' - t_b)/t_b' > (t_a' - t_a)/t_a":
#   GPU 1: a has none (gain inf) -> a.
#   GPU 2: a's gain (t_a(2) - 1)/1 against b's (1 - 0)/1 = 1.
#   GPU 3 (when b has 1): a's gain against b's (2 - 1)/2 = 0.5.
@pytest.mark.parametrize(("a_rates", "gpus", "expected"), [
    ([0, 1, 1.2, 1.3], 2, [1, 1]),  # 0.2 < 1: b
    ([0, 1, 1.2, 1.3], 3, [1, 2]),  # then 0.2 < 0.5: b again
    ([0, 1, 2, 3], 2, [2, 0]),  # linear a: 1 = 1, a tie goes to the shorter job
    ([0, 1, 1.8, 2.2], 3, [2, 1]),  # GPU 2: 0.8 < 1 -> b; GPU 3: 0.8 > 0.5 -> a
], ids=["b-gets-2nd", "b-gets-3rd", "tie-to-short", "alternate"])
def test_pairwise_rule_two_jobs(a_rates: list[float], gpus: int, expected: list[int]) -> None:
    curves = np.array([a_rates, [0, 1, 2, 3]], dtype=float)
    lengths = np.array([10.0, 100.0])
    got = afs_allocate(curves, np.array([1, 1]), np.array([3, 3]), lengths, gpus)
    assert got.tolist() == expected


# "Shorter" is by remaining time at the GPUs handed out so far (§3.3), not by length on one
# GPU. a: length 10, gains 22 % from a 2nd GPU; b: length 30, linear. GPU 1 -> a (neither has
# any: the shorter on one GPU); GPUs 2-5 -> b (as the longer job, gains 1, 1/2, 1/3, 1/4 >
# 0.22). GPU 6: b on 4 GPUs has 7.5 left, a 10: b is now the shorter job and a the longer; a
# wins only if 0.22/1.22 = 0.18 > b's 1/4: no, b (and GPU 7 too: 0.18 < 1/5). GPU 8: 0.18 >
# 1/6: a. Ordered once by length on one GPU, a stayed "shorter" and its 0.22 beat b's 1/5 as
# the longer job, so a got GPU 6 ([2, 4] and [2, 5] on 6 and 7 GPUs).
@pytest.mark.parametrize(("gpus", "expected"), [(5, [1, 4]), (6, [1, 5]), (7, [1, 6]),
                                                (8, [2, 6])])
def test_shorter_is_by_remaining_time_at_the_gpus_given(gpus: int,
                                                        expected: list[int]) -> None:
    curves = np.array([[0, 1, 1.22, 1.3, 1.35, 1.4, 1.45, 1.5], [0, 1, 2, 3, 4, 5, 6, 7]])
    got = afs_allocate(curves, np.array([1, 1]), np.array([7, 7]), np.array([10.0, 30.0]),
                       gpus)
    assert got.tolist() == expected


def test_stops_when_no_job_gains_and_respects_bounds() -> None:
    curves = np.array([[0, 1, 1, 1], [0, 1, 2, 2]], dtype=float)
    got = afs_allocate(curves, np.array([1, 1]), np.array([3, 3]), np.array([1.0, 2.0]), 10)
    assert got.tolist() == [1, 2]


def test_rigid_minimum_is_granted_at_once() -> None:
    curves = np.array([[0, 0, 0, 0, 4.0], [0, 1, 2, 3, 4]])
    got = afs_allocate(curves, np.array([4, 1]), np.array([4, 4]), np.array([1.0, 5.0]), 6)
    assert got.tolist() == [4, 2]


def test_allocate_linear_two_jobs_on_eight_gpus() -> None:
    # a: rate n, length 100; b: rate n/2, length 600 (LinearScaling, b requested 2 GPUs).
    # Gains a (n+1-n)/n vs b's (n+1-n)/(n+1) alternate: a 1,2 | b 1 | a 3 | b 2 | a 4 | b 3 | a 5
    jobs = [Job(make_job("a").work(100).build()), Job(make_job("b").gpus(2).work(300).build())]
    state = cycle_state(make_cluster(nodes=2, gpus=4), waiting=jobs)
    assert afs(state) == {"a": 5, "b": 3}


def test_allocate_uses_the_throughput_model() -> None:
    jobs = [Job(make_job("a").work(10).build()), Job(make_job("b").at(1).work(100).build())]
    base = cycle_state(make_cluster(nodes=1, gpus=3), waiting=jobs)
    model = Table({"a": [0, 1, 1.2, 1.3], "b": [0, 1, 2, 3]})
    state = CycleState.begin(replace(base.snapshot, throughput=model))
    assert afs(state, speed="exact") == {"a": 1, "b": 2}


def test_bad_speed_option_is_a_clear_error() -> None:
    with pytest.raises(Exception, match="speed must be one of"):
        build_policy("afs", {"speed": "guess"})


def test_every_gpu_is_used_when_jobs_scale() -> None:
    jobs = [Job(make_job(f"j{i}").at(i).work(100 * (i + 1)).build()) for i in range(3)]
    state = cycle_state(make_cluster(nodes=2, gpus=4), waiting=jobs)
    got = afs(state)
    assert sum(got.values()) == 8 and set(got) == {"j0", "j1", "j2"}


def _one_gpu_at_a_time(curves: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                       lengths: np.ndarray, free: int) -> np.ndarray:
    """AFS-L's loop as the paper states it, one GPU per pass (the reference for the shortcut
    that lets a lone growing job take its GPUs at once)."""
    from dlsched.policies.elastic.afs_rule import _tournament

    jobs = curves.shape[0]
    alloc = np.zeros(jobs, dtype=np.int64)
    rows = np.arange(jobs)
    work = lengths * curves[rows, np.minimum(lo, curves.shape[1] - 1)]
    while free > 0:
        held = curves[rows, alloc]
        with np.errstate(divide="ignore", invalid="ignore"):
            remaining = np.where(alloc > 0, work / np.where(held > 0, held, 1.0), np.inf)
        order = np.lexsort((rows, lengths, remaining))
        nxt = np.where(alloc == 0, lo, alloc + 1)
        step = nxt - alloc
        capped = np.minimum(nxt, curves.shape[1] - 1)
        now, new = curves[rows, alloc], curves[rows, capped]
        valid = (nxt <= hi) & (step <= free) & (new > now)
        if not valid.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            gain_a = np.where(now > 0, (new - now) / np.where(now > 0, now, 1.0), np.inf)
            gain_b = (new - now) / np.where(new > 0, new, 1.0)
        winner = _tournament(order[valid[order]], gain_a, gain_b)
        alloc[winner] = nxt[winner]
        free -= int(step[winner])
    return alloc


@pytest.mark.parametrize("seed", range(40))
def test_the_incremental_loop_gives_what_the_one_gpu_loop_gives(seed: int) -> None:
    rng = np.random.default_rng(seed)
    jobs, width = int(rng.integers(1, 5)), int(rng.integers(2, 40))
    steps = rng.choice([0.0, 0.0, 0.5, 1.0, 2.0], size=(jobs, width - 1))  # flat stretches too
    curves = np.concatenate([np.zeros((jobs, 1)), np.cumsum(steps, axis=1)], axis=1)
    lo = rng.integers(1, 4, jobs)
    hi = np.minimum(rng.integers(1, width + 5, jobs), width - 1)  # the caller's contract
    lengths = rng.uniform(1, 100, jobs)
    free = int(rng.integers(0, 3 * width))
    assert afs_allocate(curves, lo, hi, lengths, free).tolist() == _one_gpu_at_a_time(
        curves, lo, hi, lengths, free).tolist()


# AFS-P (lengths unknown): least attained service plays the shorter job. "new": just arrived,
# long (1000 on one GPU), gains 20 % from a 2nd GPU; "old": has had 1000 GPU-seconds, short
# (10), linear. AFS-L, old the shorter: GPU 1 -> old (both gains inf: the shorter); GPU 2: old's
# 1/1 = new's 1/1, the tie to the shorter: old; GPU 3: old's 1/2 < new's 1 -> new. AFS-P, new
# the "shorter" (no service yet): GPU 1 -> new; GPU 2: new's 0.2 < old's 1 -> old; GPU 3: new's
# 0.2 < old's (2 - 1)/2 -> old. The two agree only from 3 GPUs on.
AFS_P_CURVES = np.array([[0, 1, 1.2, 1.3], [0, 1, 2, 3]])


@pytest.mark.parametrize(("gpus", "afs_l", "afs_p"), [
    (1, [0, 1], [1, 0]), (2, [0, 2], [1, 1]), (3, [1, 2], [1, 2]),
], ids=["1-gpu", "2-gpus", "3-gpus"])
def test_afs_p_takes_least_attained_service_for_the_shorter_job(
        gpus: int, afs_l: list[int], afs_p: list[int]) -> None:
    lo, hi = np.array([1, 1]), np.array([3, 3])
    assert afs_allocate(AFS_P_CURVES, lo, hi, np.array([1000.0, 10.0]), gpus).tolist() == afs_l
    assert afs_allocate(AFS_P_CURVES, lo, hi, np.array([0.0, 1000.0]), gpus,
                        reorder=False).tolist() == afs_p


def _new_and_old(gpus: int) -> CycleState:
    """The case above as jobs: "old" ran 500 s on 2 GPUs and has 10 s of work left."""
    old = Job(make_job("old").gpus(2).work(1010).build())
    old.attained, old.done_work = 1000.0, 1000.0
    new = Job(make_job("new").at(500).work(1000).build())
    base = cycle_state(make_cluster(nodes=1, gpus=gpus), waiting=[old, new], now=500.0)
    model = Table({"new": [0, 1, 1.2, 1.3], "old": [0, 1, 2, 3]})
    return CycleState.begin(replace(base.snapshot, throughput=model))


@pytest.mark.parametrize(("policy", "expected"), [
    ("afs", {"old": 2}), ("afs-p", {"new": 1, "old": 1}),
])
def test_afs_p_policy_ignores_remaining_work(policy: str, expected: dict[str, int]) -> None:
    profile = build_policy(policy, {"speed": "exact"})
    got = {k: v.num_workers for k, v in profile.plugins[0].allocate(_new_and_old(2)).items()}
    assert got == expected


def test_afs_p_keeps_its_order_all_round() -> None:
    # The case of test_shorter_is_by_remaining_time_at_the_gpus_given with a fixed order
    # (attained service does not shrink with GPUs): a stays the shorter job, and its 0.22 beats
    # b's 1/5 for GPU 6.
    curves = np.array([[0, 1, 1.22, 1.3, 1.35, 1.4, 1.45, 1.5], [0, 1, 2, 3, 4, 5, 6, 7]])
    got = afs_allocate(curves, np.array([1, 1]), np.array([7, 7]), np.array([10.0, 30.0]), 6,
                       reorder=False)
    assert got.tolist() == [2, 4]
