"""Co-location policies (``pack-naive``, ``pack-limit``, ``pack-aware``) on one GPU with
Gavel's measured co-located rates (V100, steps/s alone -> beside the other job):

- GOOD: LM (batch 10) keeps 0.836 of its speed beside Recommendation (batch 1024), which keeps
  0.697: sum 1.53 > 1, every rule packs it.
- BAD: Recommendation 512 keeps 0.177 beside Recommendation 1024 (0.220): sum 0.40, an
  interfering pair that only the naive rule packs.
Restart overhead 0: the host restarting at half a share costs nothing here.
"""

from __future__ import annotations

import pytest
from builders import make_cluster, records_of

from dlsched.errors import ConfigError
from dlsched.mig.profiles import profile_share
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace

GOOD = (("LM", 10), ("Recommendation", 1024))
BAD = (("Recommendation", 512), ("Recommendation", 1024))


def gavel_jobs(kinds: tuple[tuple[str, int], ...], at: float = 0.0) -> list[JobSpec]:
    return [JobSpec(name, at * i, 1, 20_000, WorkUnit.ITERATIONS, model=model,
                    batch_size=batch)
            for i, (name, (model, batch)) in enumerate(zip("AB", kinds, strict=True))]


def run_pair(policy: str, kinds: tuple, gpus: int = 1) -> tuple[Simulator, dict, list[float]]:
    """Run on ``gpus`` V100s; also the times of cycles that found two jobs on one GPU."""
    sim = Simulator(make_cluster(nodes=1, gpus=gpus),
                    Trace("t", tuple(gavel_jobs(kinds, at=10.0)), throughput="gavel"),
                    build_policy(policy), SimConfig(restart_overhead=0.0))
    plugin, shared_at = sim.profile.queue_sort, []
    allocate = plugin.allocate

    def watched(state: CycleState) -> dict:
        targets = allocate(state)
        held: dict[int, float] = {}
        for target in targets.values():
            for gpu in target.gpus or ():
                held[gpu] = held.get(gpu, 0.0) + (target.share or 1.0)
        assert all(total <= 1.0 + 1e-9 for total in held.values()), held
        holders = [g for t in targets.values() for g in t.gpus or ()]
        if len(holders) > len(set(holders)):
            shared_at.append(state.now)
        return targets

    plugin.allocate = watched
    return sim, records_of(sim), shared_at


@pytest.mark.parametrize("policy", ["pack-naive", "pack-limit", "pack-aware"])
def test_a_good_pair_is_packed(policy: str) -> None:
    sim, records, shared_at = run_pair(policy, GOOD)
    assert records["B"].first_start == 10.0  # beside A, not after it
    assert sim.profile.queue_sort.packed_pairs == [("A", "B")]
    assert shared_at == [10.0]


@pytest.mark.parametrize("policy", ["pack-limit", "pack-aware"])
def test_an_interfering_pair_is_never_packed(policy: str) -> None:
    sim, records, shared_at = run_pair(policy, BAD)
    assert sim.profile.queue_sort.packed_pairs == [] and shared_at == []
    assert records["B"].first_start == pytest.approx(records["A"].finish_time)


def test_naive_packing_packs_an_interfering_pair() -> None:
    sim, records, _ = run_pair("pack-naive", BAD)
    assert sim.profile.queue_sort.packed_pairs == [("A", "B")]
    assert records["B"].first_start == 10.0


def test_free_gpus_first_then_no_packing() -> None:
    sim, records, shared_at = run_pair("pack-naive", GOOD, gpus=2)
    assert shared_at == [] and sim.profile.queue_sort.packings == 0
    assert all(r.preemptions == 0 for r in records.values())


def test_packed_rates_follow_the_measured_table() -> None:
    # GOOD on one V100 (Gavel, steps/s): A alone 81.65, beside B 68.27; B alone 13.28, beside
    # A 9.26. A alone on [0, 10): 816.5 steps, the other 19183.5 packed: ends at 290.99. B
    # packed on [10, 290.99): 2601.6 steps, the other 17398.4 alone: ends at 1600.86.
    _, records, _ = run_pair("pack-aware", GOOD)
    assert records["A"].finish_time == pytest.approx(290.99, abs=0.01)
    assert records["B"].finish_time == pytest.approx(1600.86, abs=0.01)


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError, match="min_speed"):
        build_policy("pack-limit", {"min_speed": "2"})


@pytest.mark.parametrize("policy", ["pack-naive", "pack-limit", "pack-aware"])
def test_a_pool_the_cluster_does_not_define_restricts_nothing(policy: str) -> None:
    """A Philly job pins its VC as its pool; on a cluster without that pool the core's filter
    lets it run anywhere, while these policies looked for nodes of that pool and started
    nothing ("no GPUs in this round's allocation", 0 of 600 on small-16)."""
    jobs = tuple(JobSpec(name, 0.0, 1, 100.0, queue="vc", pool="vc") for name in "AB")
    sim = Simulator(make_cluster(nodes=1, gpus=2), Trace("t", jobs), build_policy(policy),
                    SimConfig(restart_overhead=0.0))
    records = records_of(sim)
    assert {r.job_id: (r.first_start, r.finish_time) for r in records.values()} == {
        "A": (0.0, 100.0), "B": (0.0, 100.0)}


# Jobs that ask for a fraction of a GPU (the Alibaba 2023 trace) or a MIG instance share by
# their own request: they run at the share they asked for and are never paired. Before, a job
# asking 0.3 ran at 1.0 and a job asking 0.7 at 0.5 beside another; a MIG job became a host and
# the pair on its MIG-mode GPU stopped the run ("colocate: c named GPU 0, which has 0.00 free").
FRACTIONS = [JobSpec("p1", 0, 1, 1000.0, gpu_share=0.5), JobSpec("p2", 10, 1, 590.0, gpu_share=0.3),
             JobSpec("p3", 20, 1, 500.0, gpu_share=0.7), JobSpec("p4", 30, 2, 800.0),
             JobSpec("p5", 40, 1, 400.0, gpu_share=0.25)]
MIG_JOBS = [JobSpec(j, at, 1, work, gpu_share=profile_share(p), mig_profile=p)
            for j, at, work, p in (("a", 0, 100, "1g"), ("b", 0, 200, "3g"), ("c", 10, 50, "7g"),
                                   ("d", 20, 300, "2g"), ("e", 30, 100, "4g"))]


@pytest.mark.parametrize("policy", ["pack-naive", "pack-limit", "pack-aware"])
@pytest.mark.parametrize(("jobs", "gpu_type"), [(FRACTIONS, "V100"), (MIG_JOBS, "A100")],
                         ids=["fractions", "mig"])
def test_jobs_that_ask_a_share_keep_it(policy: str, jobs: list[JobSpec], gpu_type: str) -> None:
    sim = Simulator(make_cluster(nodes=1, gpus=2, gpu_type=gpu_type), Trace("t", tuple(jobs)),
                    build_policy(policy), SimConfig(restart_overhead=0.0))
    records = records_of(sim)
    assert {r.status for r in records.values()} == {"finished"}
    asked = {j.job_id: j.gpu_share for j in jobs}
    assert all(s == pytest.approx(asked[seg.job_id]) for seg in sim.core.segments.all()
               for s in seg.shares)
