"""MIG jobs in the scheduler core (dlsched/mig/book.py, core.py): placed by the cycle with the
MIG-aware placement, a drain for a 7g that fits nowhere, MIG-mode GPUs closed to other jobs,
the ``mig`` section of summary.json, and the ``mig`` trace format's errors. Hand-checked."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from builders import cluster_of, make_cluster, records_of, simulator

from dlsched.cluster.cluster import Node
from dlsched.errors import InputError
from dlsched.mig.profiles import profile_share
from dlsched.workload.job import JobSpec
from dlsched.workload.readers import ReaderOptions, read_trace


def mig(job_id: str, at: float, seconds: float, profile: str) -> JobSpec:
    return JobSpec(job_id, at, 1, seconds, gpu_share=profile_share(profile), mig_profile=profile)


# One A100 node, 2 GPUs, FIFO that lets later jobs try. At 0: a (4g, 50 s) takes GPU 0 at slice
# 0; b (3g, 100 s) goes beside it at slice 4 (placeability lost 9 there, 25 at slice 4 of the
# empty GPU 1); c (a whole GPU, 300 s) takes GPU 1. At 1: d (7g, 50 s) fits nowhere.
# MIG-aware drains GPU 0 for d: e (1g, arriving at 60) may not start there; d runs when b
# leaves (100-150), then e (150-250). First fit never drains: e takes slice 0 of GPU 0 at 60
# (a left it at 50), and d waits until e ends at 160.
JOBS = [mig("a", 0, 50, "4g"), mig("b", 0, 100, "3g"), JobSpec("c", 0, 1, 300.0),
        mig("d", 1, 50, "7g"), mig("e", 60, 100, "1g")]


@pytest.mark.parametrize(("placement", "starts", "drains"), [
    ("mig-aware", {"d": 100.0, "e": 150.0}, 1),
    ("first-fit", {"d": 160.0, "e": 60.0}, 0),
])
def test_the_core_places_mig_jobs_and_drains_for_a_large_one(
        placement: str, starts: dict[str, float], drains: int) -> None:
    sim = simulator("fifo", make_cluster(nodes=1, gpus=2, gpu_type="A100"), JOBS,
                    options={"strict": False}, mig_placement=placement)
    records = records_of(sim)
    assert {j: records[j].first_start for j in "abcde"} == {"a": 0.0, "b": 0.0, "c": 0.0,
                                                            **starts}
    report = sim.core.mig.report(sim.clock.time)  # type: ignore[union-attr]
    assert report["drains"] == drains
    assert report["reconfigurations"] == 8  # 4 instances created, 4 destroyed
    assert report["compute_slice_seconds"] == 4 * 50 + 3 * 100 + 7 * 50 + 1 * 100
    assert report["peak_slices_used"] == 7
    assert report["placed_by_profile"] == {"1g.5gb": 1, "3g.20gb": 1, "4g.20gb": 1,
                                           "7g.40gb": 1}


def test_a_mig_gpu_is_closed_to_other_jobs_and_a_mig_job_needs_a_mig_gpu() -> None:
    jobs = [mig("m", 0, 100, "1g"), JobSpec("half", 0, 1, 100.0, gpu_share=0.5),
            JobSpec("whole", 0, 1, 100.0)]
    sim = simulator("fifo", make_cluster(nodes=1, gpus=2, gpu_type="A100"), jobs)
    records = records_of(sim)
    # GPU 0 holds the 1g instance (6 slices free) but takes no fraction: "half" runs on
    # GPU 1, and "whole" waits for a wholly free GPU.
    assert records["half"].first_start == 0.0 and records["whole"].first_start == 100.0
    on_v100 = records_of(simulator("fifo", make_cluster(nodes=1, gpus=2), [mig("m", 0, 1, "3g")]))
    assert on_v100["m"].status == "failed"
    assert "the nodes it may use have 0" in on_v100["m"].pending_reason


def test_a_profile_no_gpu_offers_is_named_before_the_run_and_in_the_failure() -> None:
    """3g.20gb (an A100 40 GB profile) on H100 nodes, whose 3g is 3g.40gb: the job failed with
    "the nodes it may use have 0 ([filter] no node passes the filters)" and nothing warned."""
    from dlsched.mig.offered import unoffered_profiles
    from dlsched.workload.trace import Trace

    h100 = make_cluster(nodes=1, gpus=2, gpu_type="H100")
    jobs = [mig("old", 0, 100, "3g.20gb"), mig("size", 0, 100, "3g"),
            mig("own", 0, 100, "3g.40gb")]
    records = records_of(simulator("fifo", h100, jobs))
    assert [records[j].status for j in ("old", "size", "own")] == ["failed", "finished",
                                                                  "finished"]
    assert records["old"].pending_reason.endswith(
        "(no GPU of the cluster offers MIG profile '3g.20gb': H100 offers 1g.10gb, 2g.20gb, "
        "3g.40gb, 4g.40gb, 7g.80gb)")
    (warning,) = unoffered_profiles(Trace("t", tuple(jobs)), h100.type_names, "h100")
    assert warning.startswith("t: 1 job asks for MIG profiles that no GPU of cluster h100 "
                              "offers: '3g.20gb' (1 job); H100 offers 1g.10gb")
    v100 = make_cluster(nodes=1, gpus=2)
    assert "none of its GPUs is MIG-capable" in unoffered_profiles(
        Trace("t", tuple(jobs)), v100.type_names, "v100")[0]


def test_the_mig_format_and_summary(tmp_path: Path) -> None:
    from dlsched.report.output import write_run

    trace = tmp_path / "jobs.csv"
    trace.write_text("job_id,submit_time,duration,mig_profile\na,0,50,4g\nb,0,100,3g.20gb\n")
    jobs = read_trace(trace, None, ReaderOptions()).jobs
    assert [(j.mig_profile, round(j.gpu_share, 4)) for j in jobs] == [("4g", 0.5714),
                                                                      ("3g.20gb", 0.4286)]
    result = simulator("fifo", make_cluster(nodes=1, gpus=1, gpu_type="A100"), jobs).run()
    write_run(result, tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["mig"]["compute_slice_seconds"] == 4 * 50 + 3 * 100
    assert summary["mig"]["slice_utilization"] == pytest.approx(500 / (7 * 100))
    trace.write_text("job_id,submit_time,duration,mig_profile\na,0,50,4g\nb,0,100,5g\n")
    with pytest.raises(InputError, match=r"jobs.csv:3:mig_profile: unknown MIG profile '5g'"):
        read_trace(trace, None, ReaderOptions())


# Every job of the mig2 list on one A100 node of 2 GPUs under the elastic policies, which scale
# a job without declared bounds to any size ("elastic=all"): a MIG job keeps its one instance.
ELASTIC_JOBS = [mig("a", 0, 100, "1g"), mig("b", 0, 200, "3g"), mig("c", 10, 50, "7g"),
                mig("d", 20, 300, "2g"), mig("e", 30, 100, "4g")]


@pytest.mark.parametrize("policy", ["optimus", "elasticflow", "afs", "chronus"])
def test_elastic_policies_run_mig_jobs_on_one_instance(policy: str) -> None:
    sim = simulator(policy, make_cluster(nodes=1, gpus=2, gpu_type="A100"), ELASTIC_JOBS)
    records = records_of(sim)
    assert {r.status for r in records.values()} == {"finished"}
    report = sim.core.mig.report(sim.clock.time)  # type: ignore[union-attr]
    assert report["compute_slice_seconds"] == 1 * 100 + 3 * 200 + 7 * 50 + 2 * 300 + 4 * 100


def test_the_mig_book_refuses_a_second_instance_for_one_job() -> None:
    from dlsched.mig.book import MigBook, MigOverbooked

    book = MigBook(make_cluster(nodes=1, gpus=2, gpu_type="A100"))
    book.take(0, "a", "1g")
    with pytest.raises(MigOverbooked, match="a MIG job runs one instance"):
        book.take(1, "a", "1g")
    assert book.give("a") == (0, 1.0)


# A V100 node listed before an A100 node: policies that pick nodes by the job's GPU types (the
# elastic ones, Sia, Themis) put MIG jobs on the V100s ("GPU 0 cannot hold MIG profile '1g'").
MIXED = cluster_of(Node("v", "V100", 2), Node("a", "A100", 2))


@pytest.mark.parametrize("policy", ["fifo", "optimus", "afs", "elasticflow", "sia", "themis"])
def test_mig_jobs_on_a_mixed_cluster_use_only_mig_gpus(policy: str) -> None:
    sim = simulator(policy, MIXED, ELASTIC_JOBS)
    records = records_of(sim)
    assert {r.status for r in records.values()} == {"finished"}
    assert {g for s in sim.core.segments.all() for g in s.gpus} == {2, 3}


def test_a_mig_job_is_pinned_to_the_types_that_offer_its_profile() -> None:
    from dlsched.mig.core import pin_mig_types

    cluster = cluster_of(Node("v", "V100", 2), Node("a", "A100", 2), Node("b", "A100-80G", 2),
                         Node("h", "H100", 2))
    assert pin_mig_types(cluster, mig("j", 0, 1, "3g")).gpu_types == ("A100", "A100-80G",
                                                                      "H100")
    assert pin_mig_types(cluster, mig("j", 0, 1, "3g.40gb")).gpu_types == ("A100-80G", "H100")
    pinned = replace(mig("j", 0, 1, "3g"), gpu_types=("H100", "V100"))
    assert pin_mig_types(cluster, pinned).gpu_types == ("H100",)
    never = replace(mig("j", 0, 1, "3g"), gpu_types=("V100",))
    assert pin_mig_types(cluster, never) is never  # it fails at submission, as before


@pytest.mark.parametrize("policy", ["fifo", "gavel-fifo", "pollux"])
def test_slice_utilization_is_over_the_runs_window(policy: str) -> None:
    # Round-based policies leave the clock past the last finish (gavel-fifo's 360 s rounds:
    # 720 s for a last finish at 450 s); the slices' utilization, like the GPUs', is over first
    # submit to last finish. It was 0.203 here under gavel-fifo instead of 0.325.
    from dlsched.report.metrics import makespan, utilization_window

    result = simulator(policy, make_cluster(nodes=1, gpus=2, gpu_type="A100"),
                       ELASTIC_JOBS).run()
    assert result.mig is not None
    start, end = utilization_window(result)  # type: ignore[misc]
    assert (start, end) == (0.0, makespan(result))
    held = 1 * 100 + 3 * 200 + 7 * 50 + 2 * 300 + 4 * 100
    assert result.mig["slice_utilization"] == pytest.approx(held / (2 * 7 * end), abs=1e-6)


# Preemptive policies try placements with victims evicted and give back what they do not
# need. Each list stopped SRTF's run with "job ...: MIG 1g.5gb does not fit on GPU 0": a
# victim's instance could not come back to a draining GPU; a job tried and taken back kept
# its old slices over its new plan; a drain asked for while a job was only tried closed a GPU
# for the rest of the cycle, so the job's victims stayed evicted without being preempted.
RESTORE_WHILE_DRAINING = [("m7", 101, 358, "3g"), ("m10", 138, 1260, "1g"),
                          ("m18", 222, 840, "7g"), ("m20", 257, 525, "7g"),
                          ("m21", 257, 622, "2g"), ("m22", 267, 1159, "1g"),
                          ("m23", 287, 482, "4g"), ("m26", 313, 754, "1g"),
                          ("m27", 326, 358, "1g"), ("m29", 338, 140, "1g"),
                          ("m33", 374, 207, "1g")]
PLAN_OVER_EVICTED = [("m42", 465, 933, "3g"), ("m49", 545, 772, "7g"), ("m52", 579, 806, "4g"),
                     ("m55", 622, 795, "2g"), ("m56", 632, 806, "4g"),
                     ("m58", 641, 1215, "2g"), ("m59", 650, 1074, "3g"),
                     ("m60", 670, 601, "3g")]
DRAIN_IN_A_TRIAL = [("m2", 31, 1239, "1g"), ("m4", 58, 1178, "3g"), ("m7", 101, 358, "3g"),
                    ("m9", 133, 81, "1g"), ("m10", 138, 1260, "1g"), ("m11", 147, 113, "4g"),
                    ("m14", 179, 798, "1g"), ("m18", 222, 840, "7g"), ("m20", 257, 525, "7g"),
                    ("m21", 257, 622, "2g"), ("m23", 287, 482, "4g"), ("m27", 326, 358, "1g"),
                    ("m29", 338, 140, "1g"), ("m32", 374, 123, "4g"),
                    ("m33", 374, 207, "1g")]


@pytest.mark.parametrize(("rows", "gpus"), [(RESTORE_WHILE_DRAINING, 1),
                                            (PLAN_OVER_EVICTED, 2), (DRAIN_IN_A_TRIAL, 4)],
                         ids=["restore-while-draining", "plan-over-evicted",
                              "drain-in-a-trial"])
@pytest.mark.parametrize("policy", ["srtf", "themis", "tiresias"])
def test_preemptive_policies_keep_the_mig_book_and_the_core_in_step(
        policy: str, rows: list[tuple[str, int, int, str]], gpus: int) -> None:
    jobs = [mig(j, at, seconds, p) for j, at, seconds, p in rows]
    sim = simulator(policy, make_cluster(nodes=1, gpus=gpus, gpu_type="A100"), jobs)
    assert {r.status for r in records_of(sim).values()} == {"finished"}


def test_a_drain_waits_for_the_core_and_not_for_a_job_that_started() -> None:
    from dlsched.mig.book import MigBook

    book = MigBook(make_cluster(nodes=1, gpus=1, gpu_type="A100"))
    book.take(0, "small", "1g")
    trial = book.copy()
    assert trial.request_drain([0], "7g", "big") == 0
    # Asked while "big" is only tried: the cycle's own placements still see an open GPU.
    assert trial.choose([0], "1g") is not None and not book.gpus[0].draining
    book.commit_drains(book.drain_requests, started={"big"})  # a preemption made room
    assert not book.gpus[0].draining and not book.drain_requests
    book.copy().request_drain([0], "7g", "big")
    book.commit_drains(book.drain_requests)
    assert book.gpus[0].draining and book.stats.drains == 1


@pytest.mark.parametrize(("placement", "starts"), [
    ("mig-aware", {"d": 100.0, "e": 150.0}),
    ("first-fit", {"d": 160.0, "e": 60.0}),
])
def test_a_run_config_chooses_the_mig_placement(tmp_path: Path, placement: str,
                                                starts: dict[str, float]) -> None:
    # `dlsched simulate --mig-placement` (RunConfig.mig_placement) reaches the core: the run
    # above through run_policy, as the CLI runs it (before, simulate always used mig-aware).
    from dlsched.experiment import run_policy
    from dlsched.run_config import RunConfig
    from dlsched.workload.trace import Trace

    config = RunConfig(mig_placement=placement, policy_options=(("strict", "false"),))
    outcome = run_policy(config, "fifo", Trace("t", tuple(JOBS)),
                         make_cluster(nodes=1, gpus=2, gpu_type="A100"), tmp_path)
    records = {r.job_id: r for r in outcome.result.jobs}
    assert {j: records[j].first_start for j in "de"} == starts


def test_an_unknown_mig_placement_is_refused_by_name() -> None:
    from dlsched.errors import ConfigError
    from dlsched.run_config import RunConfig

    with pytest.raises(ConfigError, match="mig_placement: 'best' is not one of mig-aware, "
                                          "first-fit"):
        RunConfig(mig_placement="best").checked()


def test_utilization_counts_mig_gpus_taken_and_per_type_the_slices_used() -> None:
    """docs/report.md, "With MIG jobs": one 1g job (100 s) on one A100. The GPU is booked
    whole while it holds the instance, so ``utilization`` is 1; ``gpu_hours`` and
    ``utilization_by_type`` count 1 of 7 compute slices. The page showed 'utilization 9.48%'
    beside 'A100 7.26%' on a one-type cluster, which only this reading explains."""
    from dlsched.report.fairness import FairnessInputs
    from dlsched.report.metrics import summarize

    cluster = make_cluster(nodes=1, gpus=1, gpu_type="A100")
    sim = simulator("fifo", cluster, [mig("m", 0, 100, "1g")])
    result = sim.run()
    summary = summarize(result, FairnessInputs.of_run(result, {}, cluster))
    assert summary.utilization == 1.0
    assert summary.gpu_hours == pytest.approx(100 / 7 / 3600)
    assert dict(summary.utilization_by_type) == {"A100": pytest.approx(1 / 7)}


def test_allocation_policies_are_named_as_not_choosing_instances() -> None:
    """Four 1g jobs on two A100s ran two at a time under gavel-fifo, pollux and gandiva (each
    alone on a GPU) and four at once under fifo, with no word of why."""
    from dlsched.experiment import input_warnings
    from dlsched.run_config import RunConfig
    from dlsched.workload.trace import Trace

    cluster = make_cluster(nodes=1, gpus=2, gpu_type="A100")
    trace = Trace("t", tuple(mig(f"j{i}", 0.0, 100.0, "1g") for i in range(4)))
    config = RunConfig(policies=("fifo", "gavel-fifo", "pollux"))
    warned = [w for w in input_warnings(config, trace, cluster) if "MIG instances" in w]
    assert [w.split()[0] for w in warned] == ["gavel-fifo", "pollux"]
    assert "each of the 4 MIG jobs runs alone on its GPU" in warned[0]
    plain = Trace("t", (JobSpec("a", 0.0, 1, 1.0),))
    assert not [w for w in input_warnings(config, plain, cluster) if "MIG instances" in w]
