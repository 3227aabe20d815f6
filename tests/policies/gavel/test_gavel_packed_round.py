"""gavel-maxmin-packed (Gavel OSDI'20 §3.1 space sharing, §4.1, §5 rounds) on one K80, the
scarce type, with Gavel's measured K80 rates (steps/s, alone -> co-located):

- LM (batch 10) 23.8 -> 15.9 and Recommendation (batch 1024) 20.0 -> 12.1 beside each other:
  normalized 0.67 + 0.60 = 1.27 > 1, sharing beats time-slicing: the LP packs them;
- Recommendation 512 and 1024 beside each other: 0.40 in all, far worse than time-slicing:
  never packed, and the run equals plain ``gavel-maxmin``.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from builders import cluster_of, records_of

from dlsched.cluster.cluster import Node
from dlsched.policies.gavel.assign import Entry, assign_with_pairs
from dlsched.policies.gavel.gpus import name_gpus
from dlsched.policies.gavel.packed_round import PackedGavelRounds
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace

ONE_K80 = cluster_of(Node("k80", "K80", 1))
GOOD = (("LM", 10), ("Recommendation", 1024))
BAD = (("Recommendation", 512), ("Recommendation", 1024))


def pair_jobs(kinds: tuple[tuple[str, int], ...]) -> list[JobSpec]:
    return [JobSpec(name, 0.0, 1, 20_000, WorkUnit.ITERATIONS, model=model, batch_size=batch)
            for name, (model, batch) in zip("AB", kinds, strict=True)]


def checked_run(policy: str, jobs: list[JobSpec], **options: str) -> tuple[Simulator, dict]:
    """Run, asserting at every cycle that no GPU is held for more than 1.0 in all."""
    sim = Simulator(ONE_K80, Trace("t", tuple(jobs), throughput="gavel"),
                    build_policy(policy, options), SimConfig(restart_overhead=0.0))
    rounds = sim.profile.queue_sort
    allocate = rounds.allocate

    def guarded(state: CycleState) -> dict:
        held: dict[int, float] = defaultdict(float)
        for job in state.snapshot.running:
            for gpu, share in zip(job.allocation, job.shares, strict=True):
                held[gpu] += share
        assert max(held.values(), default=0.0) <= 1.0 + 1e-9, held
        return allocate(state)

    rounds.allocate = guarded  # type: ignore[method-assign]
    return sim, records_of(sim)


def makespan(records: dict) -> float:
    return max(r.finish_time for r in records.values())


def test_good_pair_shares_the_scarce_gpu() -> None:
    sim, packed = checked_run("gavel-maxmin-packed", pair_jobs(GOOD))
    _, alone = checked_run("gavel-maxmin", pair_jobs(GOOD))
    rounds: PackedGavelRounds = sim.profile.queue_sort  # type: ignore[assignment]
    assert rounds.seconds_shared("A", "B") >= 360.0  # at least one whole round together
    # Time-slicing needs 20000/23.8 + 20000/20.0 = 1840 s of the GPU; sharing does it sooner.
    assert makespan(alone) == pytest.approx(1838, abs=5)
    assert makespan(packed) < 0.9 * makespan(alone)
    assert all(r.status == "finished" for r in packed.values())


def test_interfering_pair_is_not_packed() -> None:
    sim, packed = checked_run("gavel-maxmin-packed", pair_jobs(BAD))
    _, alone = checked_run("gavel-maxmin", pair_jobs(BAD))
    rounds: PackedGavelRounds = sim.profile.queue_sort  # type: ignore[assignment]
    assert rounds.seconds_shared("A", "B") == 0.0
    assert {k: r.finish_time for k, r in packed.items()} == pytest.approx(
        {k: r.finish_time for k, r in alone.items()})


def test_pop_option_packs_too() -> None:
    jobs = pair_jobs(GOOD)
    sim, records = checked_run("gavel-maxmin-packed", jobs, pop_k="2")
    assert all(r.status == "finished" for r in records.values())
    assert sim.profile.queue_sort.pop_k == 2


@pytest.mark.parametrize(("entries", "free", "types", "partners"), [
    pytest.param([Entry(2.0, (0, "a"), "a", 0, partner="b"), Entry(1.0, (0, "a"), "a", 0)],
                 [1], {"a": 0, "b": 0}, {"a": "b", "b": "a"}, id="pair-first-takes-one-gpu"),
    pytest.param([Entry(3.0, (0, "a"), "a", 0), Entry(2.0, (0, "a"), "a", 0, partner="b"),
                  Entry(1.0, (0, "b"), "b", 0)],
                 [2], {"a": 0, "b": 0}, {}, id="pair-skipped-once-a-member-runs"),
    pytest.param([Entry(2.0, (0, "a"), "a", 1, partner="b"), Entry(1.0, (0, "c"), "c", 1)],
                 [4, 1], {"a": 1, "b": 1}, {"a": "b", "b": "a"}, id="pair-uses-the-room"),
])
def test_assign_with_pairs(entries: list[Entry], free: list[int], types: dict,
                           partners: dict) -> None:
    workers = {"a": 1, "b": 1, "c": 1}
    assert assign_with_pairs(entries, workers, np.array(free)) == (types, partners)


def test_name_gpus_skips_taken_gpus() -> None:
    # Two nodes of 2 GPUs; GPU 0 is kept by someone: x (1 worker on node 0) gets GPU 1,
    # y (2 workers on node 1) gets 2 and 3; a third job on node 0 would not fit.
    free = np.array([False, True, True, True])
    firsts, sizes = np.array([0, 2]), np.array([2, 2])
    assert name_gpus({"x": (0,), "y": (1, 1)}, {}, free, firsts, sizes) == {
        "x": (1,), "y": (2, 3)}
    with pytest.raises(ValueError, match="node 0"):
        name_gpus({"z": (0,)}, {}, free, firsts, sizes)
