"""Gandiva (OSDI'18) on hand-checkable cases: time-slicing at a quantum when oversubscribed
(§3.1), none when everything fits, migration of a spread job onto one node (§3.3) (linear
model: work = seconds on one GPU, so no packing), and packing with introspective unpacking
(§3.2) with Gavel's measured co-located rates. Restart overhead 0."""

from __future__ import annotations

import pytest
from builders import (
    assert_schedule,
    cluster_of,
    make_cluster,
    make_job,
    records_of,
    run,
    simulator,
)

from dlsched.cluster.cluster import Node
from dlsched.errors import ConfigError
from dlsched.mig.profiles import profile_share
from dlsched.perf.gavel_table import GavelThroughputs
from dlsched.perf.model import Placement
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace


@pytest.mark.parametrize(("policy", "a_end", "b_end"), [
    # One GPU, A and B (300 s each) at 0, quantum 60: A runs [0,60), B [60,120), A [120,180),
    # ... A's fifth slice ends at 540, then B's fifth at 600.
    pytest.param("gandiva", 540.0, 600.0, id="gandiva-round-robin"),
    pytest.param("fifo", 300.0, 600.0, id="fifo-runs-to-completion"),
])
def test_time_slicing_when_oversubscribed(policy: str, a_end: float, b_end: float) -> None:
    jobs = [make_job("A").at(0).work(300).build(), make_job("B").at(0).work(300).build()]
    records = run(policy, make_cluster(nodes=1, gpus=1), jobs)
    assert records["A"].finish_time == pytest.approx(a_end)
    assert records["B"].finish_time == pytest.approx(b_end)


# One GPU, quantum 60: A (300 s), B (30 s), C (300 s) at 0. A [0,60); at 60 B and C have never
# run, B first (arrival order): B [60,90) and ends mid-quantum; C fills the GPU at 90 (between
# quanta waiting jobs fill free GPUs). At 120 the rotation goes by how long since a job last
# ran: A (stopped at 60) before C (running now), although C has less service (30 s against
# 60 s, where least attained service would keep C). Then A and C alternate: A [120,180),
# C [180,240), A [240,300), C [300,360), A [360,420), C [420,480), A [480,540) ends at 540
# (300 s), C runs its last 90 s alone to 630.
def test_rotation_goes_to_the_job_idle_longest() -> None:
    jobs = [make_job("A").at(0).work(300).build(), make_job("B").at(0).work(30).build(),
            make_job("C").at(0).work(300).build()]
    records = run("gandiva", make_cluster(nodes=1, gpus=1), jobs)
    assert_schedule(records, [("A", 0, 540, 540), ("B", 60, 90, 90), ("C", 90, 630, 630)])
    assert (records["A"].preemptions, records["C"].preemptions) == (4, 4)


def test_no_rotation_when_everything_fits() -> None:
    jobs = [make_job(j).at(0).work(300).build() for j in ("A", "B")]
    records = run("gandiva", make_cluster(nodes=1, gpus=2), jobs)
    assert_schedule(records, [("A", 0, 300, 300), ("B", 0, 300, 300)])
    assert all(r.preemptions == 0 for r in records.values())


@pytest.mark.parametrize(("migrate", "resizes", "nodes_of_d"), [
    pytest.param("true", 1, 1, id="migrates"),
    pytest.param("false", 0, 2, id="stays-spread"),
])
def test_spread_job_migrates_onto_one_node(migrate: str, resizes: int,
                                           nodes_of_d: int) -> None:
    # Two nodes of 2 GPUs, quantum 60. At 0: A (long) and B (ends at 30) on n0 (tightest), C
    # (ends at 40) on n1. D (2 GPUs) arrives at 10, waits, and starts spread over n0 and n1
    # when B ends at 30. C ends at 40: n1 is free but for D's worker. At the 60 s quantum D
    # moves onto n1 (one resize); without migration it stays on two nodes.
    jobs = [make_job("A").at(0).work(1000).build(), make_job("B").at(0).work(30).build(),
            make_job("C").at(0).work(40).build(), make_job("D").gpus(2).at(10).work(500).build()]
    sim = simulator("gandiva", make_cluster(nodes=2, gpus=2), jobs,
                    options={"migrate": migrate})
    records = records_of(sim)
    d = records["D"]
    assert (d.first_start, d.resizes, d.preemptions) == (30.0, resizes, 0)
    assert d.finish_time == pytest.approx(530.0)
    nodes = {int(sim.cluster.gpu_node[g]) for g in sim.core.jobs["D"].allocation}
    assert len(nodes) == nodes_of_d


def test_quantum_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="quantum"):
        build_policy("gandiva", {"quantum": "0"})


# -- packing (§3.2) on one K80 with Gavel's measured rates (steps/s, alone -> co-located) -----
# LM (batch 10) 23.79 -> 15.95 beside Recommendation (batch 1024) 20.05 -> 12.13: normalized
# 0.67 + 0.60 = 1.27 > 1 (time-slicing): packed. Recommendation 512 beside 1024: 0.40, never.
GOOD = (("LM", 10), ("Recommendation", 1024))
BAD = (("Recommendation", 512), ("Recommendation", 1024))


def gavel_pair(kinds: tuple[tuple[str, int], ...]) -> list[JobSpec]:
    return [JobSpec(name, 0.0, 1, 20_000, WorkUnit.ITERATIONS, model=model, batch_size=batch)
            for name, (model, batch) in zip("AB", kinds, strict=True)]


class Interfering(GavelThroughputs):
    """Gavel's table, except that sharing really runs at 0.3x alone: the interference the
    profile did not predict, which Gandiva's introspection must catch."""

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        alone = super().rate(spec, Placement(placement.gpu_types, placement.nodes))
        return 0.3 * alone if placement.is_shared else alone


def run_pair(kinds: tuple[tuple[str, int], ...], pack: str = "true",
             model: GavelThroughputs | None = None) -> tuple[Simulator, dict, list[float]]:
    """Run on one K80 and return the times of cycles that found two jobs sharing the GPU."""
    sim = Simulator(make_cluster(nodes=1, gpus=1, gpu_type="K80"),
                    Trace("t", tuple(gavel_pair(kinds)), throughput="gavel"),
                    build_policy("gandiva", {"pack": pack}), SimConfig(restart_overhead=0.0),
                    throughput=model)
    plugin, shared_at = sim.profile.queue_sort, []
    allocate = plugin.allocate

    def watched(state: CycleState) -> dict:
        if sum(s for j in state.snapshot.running for s in j.shares) > 1.0 + 1e-9:
            raise AssertionError("GPU over 1.0")
        if any(max(j.shares) < 1.0 for j in state.snapshot.running):
            shared_at.append(state.now)
        return allocate(state)

    plugin.allocate = watched
    return sim, records_of(sim), shared_at


def test_packs_a_pair_that_beats_time_slicing() -> None:
    sim, records, shared_at = run_pair(GOOD)
    # Packed from 0: A ends at 20000 / 15.95 = 1254.2 s; B has done 1254.2 * 12.13 = 15209
    # steps and runs the other 4791 alone at 20.05 steps/s: 1493.1 s.
    assert records["A"].finish_time == pytest.approx(1254.2, abs=0.5)
    assert records["B"].finish_time == pytest.approx(1493.1, abs=0.5)
    assert (records["B"].first_start, sim.profile.queue_sort.packings > 0) == (0.0, True)
    assert shared_at and not sim.profile.queue_sort.unpacked


@pytest.mark.parametrize(("kinds", "pack"), [
    pytest.param(GOOD, "false", id="packing-off"),
    pytest.param(BAD, "true", id="interfering-pair"),
])
def test_no_packing_time_slices(kinds: tuple, pack: str) -> None:
    _, records, shared_at = run_pair(kinds, pack)
    assert shared_at == []
    assert records["B"].first_start == 60.0  # B waits for A's first quantum
    assert all(r.preemptions > 0 for r in records.values())


def test_introspection_unpacks_a_pair_that_turns_out_worse() -> None:
    # Packed at 0 on the table's prediction; at the 60 s quantum the pair measured 0.3 + 0.3
    # = 0.6 < 1: unpacked for good, and the two time-slice from then on.
    sim, records, shared_at = run_pair(GOOD, model=Interfering())
    plugin = sim.profile.queue_sort
    assert plugin.unpacked == {("A", "B")} and plugin.packings == 1
    assert shared_at == [60.0]  # seen sharing only by the cycle that unpacked them
    assert all(r.status == "finished" for r in records.values())


def test_a_job_pinned_to_a_gpu_type_runs_only_there() -> None:
    from builders import cluster_of

    from dlsched.cluster.cluster import Node

    # V100 node first: Gandiva used to put two of the three A100-pinned jobs on it.
    cluster = cluster_of(Node("v", "V100", 2), Node("a", "A100", 2))
    jobs = [JobSpec(j, 0, 1, 100.0, gpu_types=("A100",)) for j in ("j1", "j2", "j3")]
    sim = simulator("gandiva", cluster, jobs)
    assert_schedule(records_of(sim), [("j1", 0, 100, 100), ("j2", 0, 100, 100),
                                      ("j3", 100, 200, 200)])
    assert {g for s in sim.core.segments.all() for g in s.gpus} == {2, 3}


def test_jobs_asking_a_fraction_run_at_their_share() -> None:
    # p1 (0.5) and p2 (0.3) share GPU 0 by their own request; they used to be taken for a
    # packed pair and pinned at half a GPU each (p2 at 0.5), and p3 (0.7) could run at 0.5.
    jobs = [JobSpec("p1", 0, 1, 1000.0, gpu_share=0.5), JobSpec("p2", 10, 1, 590.0,
                                                                 gpu_share=0.3),
            JobSpec("p3", 20, 1, 500.0, gpu_share=0.7), JobSpec("p4", 30, 2, 800.0),
            JobSpec("p5", 40, 1, 400.0, gpu_share=0.25)]
    sim = simulator("gandiva", make_cluster(nodes=1, gpus=2), jobs)
    records = records_of(sim)
    assert {r.status for r in records.values()} == {"finished"}
    asked = {j.job_id: j.gpu_share for j in jobs}
    assert all(s == pytest.approx(asked[seg.job_id]) for seg in sim.core.segments.all()
               for s in seg.shares)


def quarter(job_id: str, share: float, at: float = 0.0) -> JobSpec:
    return JobSpec(job_id, at, 1, 300.0, gpu_share=share)


@pytest.mark.parametrize(("jobs", "gpus", "expected", "preemptions"), [
    # One GPU, four quarter-GPU jobs of 300 s: a GPU's worth in all, so nothing rotates (they
    # used to count a whole GPU each and take turns, ending at 1020, 1080, 1140 and 1200 s).
    pytest.param([quarter(j, 0.25) for j in "ABCD"], 1,
                 [(j, 0, 300, 300) for j in "ABCD"], 0, id="four-quarters-fit-one-gpu"),
    # One GPU, three halves: two at a time. At 60 C (never run) and A (ran until now; A before
    # B by id) go; B [120,180), C [180,240), B [240,300); A ends at 300, then B (120 s left)
    # and C (180 s left) run together to 420 and 480.
    pytest.param([quarter(j, 0.5) for j in "ABC"], 1,
                 [("A", 0, 300, 300), ("B", 0, 420, 420), ("C", 60, 480, 480)], 2,
                 id="three-halves-two-at-a-time"),
    # Two GPUs: a whole-GPU job and two halves ask for 2 GPUs in all: no rotation.
    pytest.param([quarter("W", 1.0), quarter("H1", 0.5), quarter("H2", 0.5)], 2,
                 [("H1", 0, 300, 300), ("H2", 0, 300, 300), ("W", 0, 300, 300)], 0,
                 id="whole-and-halves-fit"),
])
def test_rotation_counts_gpu_fractions(jobs: list[JobSpec], gpus: int,
                                       expected: list[tuple], preemptions: int) -> None:
    records = run("gandiva", make_cluster(nodes=1, gpus=gpus), jobs)
    assert_schedule(records, expected)
    assert max(r.preemptions for r in records.values()) == preemptions


def test_mig_workers_still_take_whole_gpus_beside_fractions() -> None:
    # A100s in MIG mode are booked whole by the core; the rotation counts a MIG worker as a
    # whole GPU, so a fraction is never named onto a GPU in MIG mode (an AllocationError).
    def mig(job_id: str, at: float, seconds: float, profile: str) -> JobSpec:
        return JobSpec(job_id, at, 1, seconds, gpu_share=profile_share(profile),
                       mig_profile=profile)

    jobs = [mig("a", 0, 50, "4g"), mig("b", 0, 100, "3g"), JobSpec("c", 0, 1, 300.0),
            mig("d", 1, 50, "7g"), mig("e", 60, 100, "1g"), mig("f", 0, 100, "1g"),
            JobSpec("g", 0, 1, 300.0, gpu_share=0.5)]
    records = run("gandiva", cluster_of(Node("n0", "A100", 2)), jobs)
    assert {r.status for r in records.values()} == {"finished"}
    assert (records["b"].finish_time, records["g"].finish_time) == (270.0, 500.0)
