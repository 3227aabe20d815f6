"""A wrapped policy's own preemption inside a cluster queue whose quota is all in use: a swap
inside one queue is quota-neutral (its victims' quota is freed, the preemptor's reserved), so
quota admission must not refuse the job before the policy's PostFilter may look for victims.

Golden: two 4-GPU jobs start at 0 and run 1e5 s; Tiresias' one threshold (600 GPU-seconds)
demotes them at 150 s. A 4-GPU job of 100 s arrives at 1000 s in Tiresias' queue 0. Alone on 8
GPUs, Tiresias preempts a demoted job for it: it runs 1000..1100, the victim resumes then and
ends 100 s late. Inside one queue ``a`` of 8 GPUs nominal, no cohort, on 16 GPUs (quota, not
room, is short) the schedule is the same; before the fix the short job waited for the quota of
a long one, until 1e5 s. SRTF likewise (its victims: the longest remaining)."""

from __future__ import annotations

import csv
import importlib.util
import random
import sys
from pathlib import Path

import pytest
from builders import make_cluster, records_of
from harness import config_yaml, cq

from dlsched.cluster.cluster import Cluster, Node
from dlsched.policies.sjf import srtf
from dlsched.policies.tiresias import tiresias
from dlsched.report.output import run_identity
from dlsched.report.tenant_output import write_audit
from dlsched.scheduling.profile import Profile
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

LONG = (JobSpec("long0", 0.0, 4, 1e5, queue="a"), JobSpec("long1", 0.0, 4, 1e5, queue="a"))
SHORT = JobSpec("short", 1000.0, 4, 100.0, queue="a")


def _run(profile: Profile, jobs: tuple[JobSpec, ...], nodes: int) -> tuple[dict, list]:
    sim = Simulator(make_cluster(nodes=nodes, gpus=8), Trace("t", jobs), profile,
                    SimConfig(restart_overhead=0.0))
    records = {k: (r.first_start, r.finish_time, r.preemptions)
               for k, r in records_of(sim).items()}
    admission = sim.core.profile.queue_sort
    evictions = ([(e.victim, e.preemptor, e.reason, e.decided_by)
                  for e in admission.audit.evictions]
                 if isinstance(admission, TenantAdmission) else [])
    return records, evictions


def _tenants(*queues: dict) -> object:
    return parse_tenants(config_yaml(list(queues)))


@pytest.mark.parametrize("build", [lambda: tiresias(thresholds=(600.0,)), srtf],
                         ids=["tiresias", "srtf"])
def test_policy_preempts_inside_a_full_queue(build) -> None:  # type: ignore[no-untyped-def]
    plain, _ = _run(build(), (*LONG, SHORT), nodes=1)
    assert plain["short"] == (1000.0, 1100.0, 0)
    assert sorted(plain[j][1:] for j in ("long0", "long1")) == [(1e5, 0), (1e5 + 100, 1)]
    wrapped, evictions = _run(with_tenants(build(), _tenants(cq("a", 8, cohort=None))),
                              (*LONG, SHORT), nodes=2)
    assert wrapped == plain
    assert [(e[1], e[2], e[3]) for e in evictions] == [("short", "InClusterQueue", "policy")]




def test_a_demotion_wakes_the_policys_turn() -> None:
    """The short job arrives at 100 s, before the long ones are demoted (150 s): the queue's
    quota refuses it and Tiresias has no victim yet. The demotion wakes a cycle (the tenant
    layer's cycle needed preemption, so it was not quiet) and the short job preempts then,
    150..250, as alone."""
    jobs = (*LONG, JobSpec("short", 100.0, 4, 100.0, queue="a"))
    plain, _ = _run(tiresias(thresholds=(600.0,)), jobs, nodes=1)
    assert plain["short"] == (150.0, 250.0, 0)
    wrapped, evictions = _run(with_tenants(tiresias(thresholds=(600.0,)),
                                           _tenants(cq("a", 8, cohort=None))), jobs, nodes=2)
    assert wrapped == plain
    assert [(e[1], e[3]) for e in evictions] == [("short", "policy")]


def test_policy_swap_stays_within_the_borrowing_limit() -> None:
    """Queue a (nominal 8, borrowing limit 4) and b (nominal 8) in one cohort, on 24 GPUs.
    a0, a1 (4 GPUs each, demoted at 150 s) and b0 (4 GPUs, demoted too) run from 0. At
    1000 s a's ``short`` (4 GPUs, 100 s) starts by borrowing 4 (a at its limit, 12); at
    1001 s ``mid`` (4 GPUs, 500 s) finds no victim by Kueue's rules (a borrows, so it reclaims
    nothing; b0 is b's): Tiresias evicts a demoted job of a for it, never b0. At 1010 s
    ``wide`` (8 GPUs) waits though 8 GPUs are free: its policy's one victim left (a's other
    demoted job) would leave a at 8 + 8 = 16, over nominal + limit. At 1100 s ``short`` ends;
    evicting that victim then leaves a at 4 + 8 = 12, and ``wide`` starts."""
    config = _tenants(cq("a", {"nominal": 8, "borrowing_limit": 4}), cq("b", 8))
    jobs = (JobSpec("a0", 0.0, 4, 1e5, queue="a"), JobSpec("a1", 0.0, 4, 1e5, queue="a"),
            JobSpec("b0", 0.0, 4, 1e5, queue="b"), JobSpec("short", 1000.0, 4, 100.0, queue="a"),
            JobSpec("mid", 1001.0, 4, 500.0, queue="a"),
            JobSpec("wide", 1010.0, 8, 100.0, queue="a"))
    records, evictions = _run(with_tenants(tiresias(thresholds=(600.0,)), config), jobs,
                              nodes=3)
    assert records["short"] == (1000.0, 1100.0, 0)
    assert records["mid"] == (1001.0, 1501.0, 0)
    assert records["wide"] == (1100.0, 1200.0, 0)
    assert records["b0"] == (0.0, 1e5, 0)
    assert sorted((e[1], e[2], e[3]) for e in evictions) == [
        ("mid", "InClusterQueue", "policy"), ("wide", "InClusterQueue", "policy")]
    assert {e[0] for e in evictions} == {"a0", "a1"}



def test_a_later_job_of_lower_priority_still_gets_the_policys_turn() -> None:
    """SRTF inside queue a (8 GPUs nominal, no cohort) on 16 GPUs, the two long jobs
    running. At 1000 s ``hi`` (priority 1, remaining 1e6 s) and ``lo`` (priority 0, 100 s),
    4 GPUs each, arrive: the queue tries ``hi`` first (priority first), whose SRTF victims
    (running jobs with longer remaining times) are none, so it fails on quota. ``lo`` asks no
    more, which would close the queue for the cycle under Kueue's rules alone (``skip.py``);
    but SRTF ranks it before the long jobs, whose victim it may be: it evicts one and runs
    1000..1100 (then ``hi``, first by priority, takes the quota)."""
    jobs = (*LONG, JobSpec("hi", 1000.0, 4, 1e6, queue="a", priority=1),
            JobSpec("lo", 1000.0, 4, 100.0, queue="a"))
    records, evictions = _run(with_tenants(srtf(), _tenants(cq("a", 8, cohort=None))), jobs,
                              nodes=2)
    assert records["lo"] == (1000.0, 1100.0, 0)
    assert records["hi"][0] == 1100.0
    assert [(e[1], e[2], e[3]) for e in evictions] == [("lo", "InClusterQueue", "policy")]


MIXED = """
flavors: [{name: f}]
cohorts: [{name: co}]
cluster_queues:
  - {name: q1, cohort: co, quotas: {f: {gpu: {nominal: 4, borrowing_limit: 2}}},
     preemption: {reclaim_within_cohort: any}}
  - {name: q2, cohort: co, quotas: {f: {gpu: {nominal: 4, lending_limit: 2}}},
     preemption: {reclaim_within_cohort: lower-priority, within_cluster_queue: lower-priority}}
  - {name: q3, quotas: {f: {gpu: 4}}}
"""


def _checker():  # type: ignore[no-untyped-def]
    path = Path(__file__).resolve().parents[2] / "benchmarks/check_tenancy_invariants.py"
    spec = importlib.util.spec_from_file_location("check_tenancy_invariants", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["check_tenancy_invariants"] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("build", [lambda: tiresias(thresholds=(300.0, 3000.0)), srtf],
                         ids=["tiresias", "srtf"])
def test_policy_swaps_keep_the_invariants(build, seed: int,  # type: ignore[no-untyped-def]
                                          tmp_path: Path) -> None:
    """Random jobs of two priorities in three queues (borrowing and lending limits, reclaim,
    Kueue's own preemption inside q2, a queue without cohort) on 3 x 4 GPUs, whose quotas (12)
    bind before the GPUs do: the audit files pass the invariant checker (no queue or cohort
    over its limits, no GPU held twice, no loop of the tenant layer's evictions) and every
    eviction the policy decided is of the preemptor's own cluster queue."""
    rng = random.Random(seed)
    specs = tuple(JobSpec(f"j{i:02d}", round(rng.uniform(0, 3000), 1), rng.choice((1, 1, 2, 4)),
                          round(rng.expovariate(1 / 900), 1) + 1.0,
                          queue=rng.choice(("q1", "q2", "q3")), priority=rng.choice((0, 0, 1)))
                  for i in range(50))
    cluster = Cluster("t", tuple(Node(f"n{i}", "V100", 4) for i in range(3)))
    sim = Simulator(cluster, Trace("mixed", specs), with_tenants(build(), parse_tenants(MIXED)),
                    SimConfig())
    result = sim.run()
    write_audit(sim.core, sim.profile.queue_sort, tmp_path, run_identity(result.info))
    assert _checker().check(tmp_path) == []
    with (tmp_path / "evictions.csv").open() as handle:
        evictions = list(csv.DictReader(handle))
    policy = [e for e in evictions if e["decided_by"] == "policy"]
    assert all(e["victim_cluster_queue"] == e["preemptor_cluster_queue"] for e in policy)
