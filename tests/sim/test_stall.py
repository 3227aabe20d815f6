"""The simulator ends a run whose waiting jobs can never start, even when a policy's rounds
keep waking it (before, a rigid job beyond its queue's quota under Gavel's rounds cycled
forever): ``stalled_at`` says when, and the jobs left waiting keep their reason."""

from __future__ import annotations

import json
from pathlib import Path

from builders import cluster_of, make_job
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cluster.cluster import Node
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.tenancy.reasons import Reason
from dlsched.workload.trace import Trace

TENANTS = parse_tenants("""
flavors: [{name: any}]
cluster_queues: [{name: a, quotas: {any: {gpu: 4}}}]
""")
CLUSTER = cluster_of(Node("n0", "V100", 4), Node("n1", "V100", 4))
JOBS = (make_job("big").gpus(8).work(3600).queue("a").build(),
        make_job("small").gpus(1).at(10).work(600).queue("a").build())


def test_a_run_whose_jobs_can_never_start_ends() -> None:
    sim = Simulator(CLUSTER, Trace("t", JOBS), with_tenants(build_policy("gavel-maxmin"),
                                                            TENANTS), SimConfig(stall_cycles=20))
    result = sim.run()
    records = {j.job_id: j for j in result.jobs}
    assert records["small"].status == "finished" and records["big"].first_start is None
    assert Reason.NO_QUOTA.value in records["big"].pending_reason
    assert result.stalled_at is not None and result.stalled_at >= records["small"].finish_time
    assert sim.core.cycles < 100


def test_a_run_that_finishes_has_not_stalled() -> None:
    result = Simulator(CLUSTER, Trace("t", JOBS[1:]), build_policy("gavel-maxmin")).run()
    assert result.stalled_at is None and all(j.status == "finished" for j in result.jobs)


def test_the_cli_warns_and_run_json_says_when(tmp_path: Path) -> None:
    trace = tmp_path / "jobs.csv"  # one 8-GPU job in queue a of 4 GPUs: it can never start
    trace.write_text("job_id,submission_time,duration,num_gpu\nbig,0,3600,8\nsmall,10,60,1\n")
    tenants = tmp_path / "t.yaml"
    tenants.write_text("flavors: [{name: any}]\n"
                       "cluster_queues: [{name: default, quotas: {any: {gpu: 4}}}]\n")
    result = CliRunner().invoke(app, ["simulate", "--trace", str(trace), "--cluster", "small-16",
                                      "--policy", "gavel-maxmin", "--tenants", str(tenants),
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "nothing could start (1 job not finished" in " ".join(result.output.split())
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["stalled_at"] >= 70.0  # after the small job finished



def _both_nodes_in_repair(specs: tuple, profile=None):
    """Gandiva (60 s rounds) or ``profile`` on two nodes of 4 GPUs that both fail at 100 s
    for 2 h (the only failures: injected); 20 idle cycles in a row end a stuck run."""
    from dlsched.sim.failures import Failure, FailureCategory, FailureModel

    quiet = FailureModel("none", (FailureCategory("gpu", 0.0, 0.0),))
    sim = Simulator(CLUSTER, Trace("t", specs), profile or build_policy("gandiva"),
                    SimConfig(restart_overhead=0.0, failures=quiet, stall_cycles=20))
    assert sim.failures is not None
    for node in (0, 1):
        sim.failures.inject(Failure(100.0, node, "gpu", 7200.0))
    return sim.run()


def test_idle_rounds_while_every_node_is_in_repair_are_not_a_stall() -> None:
    # 120 idle rounds pass before the repairs, more than the 20 that end a stuck run: the
    # job they stopped at 100 s resumes at 7,300 s and finishes (it stopped as "nothing could
    # start").
    result = _both_nodes_in_repair((make_job("j").gpus(4).work(3600).build(),))
    record = result.jobs[0]
    assert result.stalled_at is None and record.status == "finished"
    assert record.finish_time >= 7300.0 + 3500.0  # resumed after the repairs


def test_a_job_stuck_for_another_reason_still_stalls_once_the_nodes_are_back() -> None:
    # The 8-GPU job exceeds its queue's quota of 4: the repairs do not help it, and the run
    # ends 20 rounds after them (not 20 rounds after the failures, not never).
    profile = with_tenants(build_policy("gavel-maxmin"), TENANTS)
    result = _both_nodes_in_repair(JOBS[:1], profile)
    assert result.jobs[0].first_start is None
    assert result.stalled_at is not None and result.stalled_at >= 7300.0
