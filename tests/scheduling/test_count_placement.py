"""Placement told from the free-GPU counts (issue 14): ``count_miss``/``count_fits`` answer as
``place`` does, and Consolidated's ``spread`` picks the nodes its score-by-score loop picks."""

from __future__ import annotations

import random

import pytest
from builders import cycle_state, make_cluster, make_job

from dlsched.scheduling.placement import count_fits, count_miss, place
from dlsched.scheduling.plugins.scores import Consolidated
from dlsched.scheduling.registry import build_policy
from dlsched.workload.job import Job


def _random_state(rng: random.Random, nodes: int, gpus: int):  # type: ignore[no-untyped-def]
    cluster = make_cluster(nodes=nodes, gpus=gpus)
    busy = rng.random()
    used = {g: 1.0 for g in range(cluster.num_gpus) if rng.random() < busy}
    return cycle_state(cluster, used)


@pytest.mark.parametrize("placement", ["consolidated", "most-free", "topology"])
def test_counts_answer_as_place_does(placement: str) -> None:
    profile = build_policy("fifo", placement=placement)
    rng = random.Random(7)
    told = 0
    for case in range(300):
        state = _random_state(rng, rng.choice([1, 3, 8]), rng.choice([4, 8]))
        job = Job(make_job(f"j{case}").gpus(rng.choice([1, 2, 3, 4, 6, 8, 12, 16])).build())
        fits = count_fits(state, job, profile.filters, profile.take_limit)
        missed = count_miss(state, job, profile.filters, profile.scores)
        gpus, status = place(state, job, profile.filters, profile.scores, profile.take_limit)
        if gpus:
            state.give_back(gpus, [1.0] * len(gpus))
        assert fits is not None and fits == status.ok, case
        if missed is not None:
            told += 1
            assert not status.ok and str(missed) == str(status), case
    assert told > 50  # the shortcut was exercised


def test_counts_do_not_answer_for_shares() -> None:
    profile = build_policy("fifo")
    state = cycle_state(make_cluster(nodes=1, gpus=2), {0: 1.0, 1: 0.5})
    job = Job(make_job("f").gpus(2).share(0.5).build())
    assert count_fits(state, job, profile.filters, profile.take_limit) is None
    assert count_miss(state, job, profile.filters, profile.scores) is None


def test_spread_picks_what_the_score_loop_picks(monkeypatch: pytest.MonkeyPatch) -> None:
    profile = build_policy("fifo", placement="consolidated")
    rng = random.Random(11)
    seen_spread = 0
    for case in range(200):
        state = _random_state(rng, rng.choice([3, 8, 16]), rng.choice([4, 8]))
        job = Job(make_job(f"s{case}").gpus(rng.choice([5, 9, 12, 16, 24, 33])).build())
        fast = place(state, job, profile.filters, profile.scores, profile.take_limit)
        if fast[0]:
            state.give_back(fast[0], [1.0] * len(fast[0]))
            seen_spread += len({int(state.cluster.gpu_node[g]) for g in fast[0]}) > 1
        with monkeypatch.context() as patch:
            patch.delattr(Consolidated, "spread")
            slow = place(state, job, profile.filters, profile.scores, profile.take_limit)
        if slow[0]:
            state.give_back(slow[0], [1.0] * len(slow[0]))
        assert fast[0] == slow[0] and str(fast[1]) == str(slow[1]), case
    assert seen_spread > 20
