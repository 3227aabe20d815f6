"""Allocation policies (Optimus, AFS, Gavel, Sia) inside the tenant model, in the simulator:
unchanged inside one big queue, and never over a queue's quota (issue 6: "any policy of the
core runs inside the tenant model unchanged")."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest
from builders import cluster_of, make_cluster, make_job, records_of
from harness import config_yaml, cq
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cluster.cluster import Cluster, Node
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace

Usage = dict[tuple[str, str], int]  # (queue, GPU type) -> GPUs given in one round


def spy(profile: Profile) -> list[Usage]:
    """Record, every round, the GPUs per (queue, GPU type) the gate hands out."""
    gate, rounds = profile.allocators[0], []
    inner = gate.allocate

    def allocate(state: CycleState) -> Mapping[str, Assignment]:
        out = inner(state)
        queues = {j.job_id: j.spec.queue for j in (*state.snapshot.running,
                                                   *state.snapshot.waiting)}
        used: Usage = {}
        for job_id, target in out.items():
            for node in target.nodes:
                key = (queues[job_id], state.cluster.nodes[node].gpu_type)
                used[key] = used.get(key, 0) + 1
        rounds.append(used)
        return out

    gate.allocate = allocate  # type: ignore[method-assign]
    return rounds


def simulate(profile: Profile, cluster: Cluster, jobs: list[JobSpec],
             throughput: str = "linear") -> dict:
    sim = Simulator(cluster, Trace("t", tuple(jobs), throughput=throughput), profile,
                    SimConfig(restart_overhead=0.0))
    return {k: (r.first_start, r.finish_time, r.preemptions, r.status)
            for k, r in records_of(sim).items()}


def elastic(job_id: str, queue: str, at: float = 0.0, most: int = 8,
            work: float = 4000.0) -> JobSpec:
    return make_job(job_id).at(at).queue(queue).work(work).elastic(1, most).build()


JOBS = [elastic("a1", "a"), elastic("a2", "a", at=30.0, work=2000.0),
        elastic("b1", "b", at=500.0, most=4, work=1000.0)]
ONE_QUEUE = config_yaml([cq("all", 1000, cohort=None)])


@pytest.mark.parametrize("policy", ["optimus", "afs", "pollux"])
def test_policy_unchanged_inside_one_big_queue(policy: str) -> None:
    jobs = [replace(j, queue="all") for j in JOBS]
    cluster = make_cluster(nodes=2, gpus=4)
    alone = simulate(build_policy(policy), cluster, jobs)
    inside = simulate(with_tenants(build_policy(policy), parse_tenants(ONE_QUEUE)), cluster,
                      jobs)
    assert inside == alone
    assert all(r[3] == "finished" for r in alone.values())


@pytest.mark.parametrize(("tenants", "most_a"), [
    (None, 8),  # without tenants a's two jobs take the whole idle cluster
    (config_yaml([cq("a", 4, cohort=None), cq("b", 4, cohort=None)]), 4),  # never over 4
    (config_yaml([cq("a", 4), cq("b", 4)]), 8),  # a cohort: a borrows b's idle 4
    (config_yaml([cq("a", {"nominal": 4, "borrowing_limit": 2}), cq("b", 4)]), 6),
], ids=["no-tenants", "strict", "cohort", "borrowing-limit-2"])
def test_optimus_stays_within_quota(tenants: str | None, most_a: int) -> None:
    profile = build_policy("optimus")
    if tenants is not None:
        profile = with_tenants(profile, parse_tenants(tenants))
    rounds = spy(profile)
    records = simulate(profile, make_cluster(nodes=2, gpus=4), JOBS)
    assert all(r[3] == "finished" for r in records.values())
    assert max(r.get(("a", "V100"), 0) for r in rounds) == most_a


def test_the_lender_gets_its_quota_back_at_its_arrival() -> None:
    """12 GPUs, a and b nominal 4 in one cohort (4 GPUs beyond every quota). a1 alone runs
    on 8 (4 borrowed); b1 (rigid 4) arrives at 500: from that round a has 4 and b 4."""
    tenants = parse_tenants(config_yaml([cq("a", 4), cq("b", 4)]))
    profile = with_tenants(build_policy("optimus"), tenants)
    rounds = spy(profile)
    jobs = [elastic("a1", "a", most=12, work=20000.0),
            make_job("b1").at(500.0).queue("b").gpus(4).work(4000.0).build()]
    records = simulate(profile, make_cluster(nodes=3, gpus=4), jobs)
    assert records["b1"][0] == 500.0
    first_with_b = next(i for i, r in enumerate(rounds) if ("b", "V100") in r)
    assert rounds[first_with_b - 1] == {("a", "V100"): 8}
    assert rounds[first_with_b] == {("a", "V100"): 4, ("b", "V100"): 4}


FAST = ("ResNet-18", 256)  # Gavel's table: 10.3 steps/s on V100, 0.89 on K80


def test_gavel_maxmin_respects_per_flavor_quotas() -> None:
    """Four ResNet-18 jobs of queue a on 4 K80 + 4 V100. Alone, Gavel's max-min puts several
    on V100s at once; a may use 1 V100 (and 4 K80s), so never more than one is on a V100."""
    cluster = cluster_of(Node("k80", "K80", 4), Node("v100", "V100", 4))
    tenants = config_yaml([cq("a", None, cohort=None)], flavors=[
        {"name": "v100", "gpu_types": ["V100"]}, {"name": "k80", "gpu_types": ["K80"]}])
    tenants = tenants.replace("quotas:\n    f:\n      gpu: null",
                              "quotas:\n    v100: {gpu: 1}\n    k80: {gpu: 4}")
    jobs = [JobSpec(f"j{i}", 0.0, 1, 20000.0, WorkUnit.ITERATIONS, model=FAST[0],
                    batch_size=FAST[1], queue="a") for i in range(4)]
    used = {}
    for name, profile in (("alone", build_policy("gavel-maxmin")),
                          ("inside", with_tenants(build_policy("gavel-maxmin"),
                                                  parse_tenants(tenants)))):
        rounds = spy(profile)
        records = simulate(profile, cluster, jobs, throughput="gavel")
        assert all(r[3] == "finished" for r in records.values())
        used[name] = max(r.get(("a", "V100"), 0) for r in rounds)
    assert used == {"alone": 4, "inside": 1}


def test_simulate_sia_with_tenants_end_to_end(tmp_path: Path) -> None:
    """``dlsched simulate --policy sia --tenants``: the first 6 jobs of Pollux workload 1 on
    the 64-T4 Pollux cluster (10-minute rounds, to keep it fast), one queue of nominal 8
    without a cohort: every job finishes, and the run never gives the queue more than 8 GPUs
    (the timeline's used GPUs; without the gate Sia uses more)."""
    tenants = tmp_path / "t.yaml"
    tenants.write_text(config_yaml([cq("default", 8, cohort=None)],
                                   flavors=[{"name": "f"}]))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["simulate", "--trace", "pollux-1", "--limit", "6",
                                      "--cluster", "pollux-64", "--policy", "sia",
                                      "--policy-opt", "round_seconds=600",
                                      "--tenants", str(tenants), "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader((out / "jobs.csv").open()))
    assert len(rows) == 6 and all(r["status"] == "finished" for r in rows)
    used = [float(r["used_gpus"]) for r in csv.DictReader((out / "timeline.csv").open())]
    assert max(used) == 8.0


@pytest.mark.parametrize("policy", ["gavel-maxmin-agnostic", "gavel-las"])
def test_gavel_simulator_rounds_unchanged_inside_one_big_queue(policy: str) -> None:
    """Gavel's simulator rounds (``mechanism=artifact``) name the running jobs that stay as
    ``Targets.kept``, outside the mapping; the gate returned a plain mapping without them, so
    every job that stayed was preempted each round (60 jobs, agnostic: 792 preemptions, mean
    JCT +37%). Inside one queue as large as the cluster the schedule is the policy's alone."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.workload.bundled import resolve_trace
    from dlsched.workload.readers.base import ReaderOptions

    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=40))
    trace = replace(trace, jobs=tuple(replace(job, queue="all") for job in trace.jobs))
    cluster = resolve_cluster("gavel-108")

    def run(profile: Profile) -> dict:
        sim = Simulator(cluster, trace, profile, SimConfig(
            restart_overhead=0.0, round_seconds=360.0, rounds_only=True))
        return {k: (r.first_start, r.finish_time, r.preemptions, r.resizes)
                for k, r in records_of(sim).items()}

    options = {"mechanism": "artifact"}
    alone = run(build_policy(policy, options))
    inside = run(with_tenants(build_policy(policy, options), parse_tenants(ONE_QUEUE)))
    assert inside == alone
    assert sum(r[2] for r in alone.values()) == 0
