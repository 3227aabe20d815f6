"""Allocation policies in the simulator: every job finishes with exactly its work, no GPU is
double-booked, and an elastic policy beats FIFO where jobs can grow."""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import cpu_limit, make_cluster, make_job, run

from dlsched.cluster.builtin import resolve_cluster
from dlsched.perf.goodput import GoodputThroughputs
from dlsched.perf.model import Placement
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

ELASTIC = ("optimus", "afs", "afs-p", "elasticflow", "pollux", "sia")


# Two 1-GPU-requesting elastic jobs (linear scaling) on 4 GPUs: an elastic policy gives them
# 2 GPUs each (or all 4 to one at a time), so both finish well before FIFO's 100 s.
@pytest.mark.parametrize("policy", ["optimus", "afs", "afs-p"])
def test_elastic_policy_uses_idle_gpus(policy: str) -> None:
    jobs = [make_job("A").at(0).work(100).elastic(1, 4).build(),
            make_job("B").at(0).work(100).elastic(1, 4).build()]
    elastic = run(policy, make_cluster(nodes=1, gpus=4), jobs)
    rigid = run("fifo", make_cluster(nodes=1, gpus=4), jobs)
    assert all(r.status == "finished" for r in elastic.values())
    assert max(r.finish_time for r in elastic.values()) < max(
        r.finish_time for r in rigid.values()) * 0.75


# The first 12 jobs of Pollux workload 1 on pollux-64 under the Pollux step-time model.
@pytest.mark.parametrize("policy", ELASTIC)
def test_pollux_workload_finishes(policy: str) -> None:
    trace = resolve_trace("pollux-1").head(12)
    sim = Simulator(resolve_cluster("pollux-64"), trace, build_policy(policy),
                    SimConfig(restart_overhead=30.0))
    with cpu_limit(60):
        result = sim.run()
    assert all(j.status == "finished" for j in result.jobs), [
        (j.job_id, j.status, j.pending_reason) for j in result.jobs if j.status != "finished"]
    assert all(j.work_done == pytest.approx(j.work) for j in result.jobs)


# ElasticFlow admission: on 2 GPUs, A (400 s of 1-GPU work, deadline 300) can meet its
# deadline with 2 GPUs; B arrives at 10 needing the whole cluster past A's deadline too, so
# admitting B would break A's guarantee: B is dropped at once (status failed, with the reason),
# A finishes by its deadline.
def test_elasticflow_drops_what_it_cannot_admit() -> None:
    jobs = [make_job("A").at(0).work(400).elastic(1, 2).deadline(300).build(),
            make_job("B").at(10).work(400).elastic(1, 2).deadline(320).build()]
    records = run("elasticflow", make_cluster(nodes=1, gpus=2), jobs)
    assert records["A"].status == "finished" and records["A"].finish_time <= 300
    assert records["B"].status == "failed" and "dropped" in records["B"].pending_reason


def _goodput_sim(policy: str, cluster: object, jobs: list, **config: object) -> Simulator:
    config.setdefault("restart_overhead", 0.0)
    sim = Simulator(cluster, Trace("test", tuple(jobs), throughput="goodput"),  # type: ignore
                    build_policy(policy), SimConfig(**config),  # type: ignore[arg-type]
                    throughput=GoodputThroughputs())
    return sim


# cifar10 at its reference size (batch 128, 8 T4s on 2 nodes), alone, FIFO with 60 s rounds:
# re-rated after every cycle, its progress follows the piecewise-constant rate rate(f) set at
# each round (computed here by hand), not the run's mean rate. Early in training φ is small,
# so the job is much slower than its mean: linear progress would be far ahead at 600 s.
def test_rerating_follows_progress_round_by_round() -> None:
    work, model = 40_000.0, GoodputThroughputs()
    job = make_job("c").at(0).gpus(8).work(work).build()
    job = replace(job, model="cifar10", batch_size=128)
    where = Placement(("T4",) * 8, (0, 0, 0, 0, 1, 1, 1, 1))
    done = 0.0
    for _ in range(10):  # ten 60 s rounds
        done += 60.0 * model.rate(job, where, done / work)
    sim = _goodput_sim("fifo", make_cluster(nodes=2, gpus=4, gpu_type="T4"), [job],
                       round_seconds=60.0, max_time=600.0)
    record = sim.run().jobs[0]
    assert record.work_done == pytest.approx(done, rel=1e-9)
    assert done < 0.5 * 600.0 * model.rate(job, where)
    assert sim.core.rerater is not None and sim.core.rerater.rerated > 0


# The first 12 jobs of Pollux workload 1 under the goodput model, re-rated each round: every
# job still finishes with exactly its work.
@pytest.mark.parametrize("policy", ["pollux", "sia", "tiresias"])
def test_rerated_pollux_workload_finishes(policy: str) -> None:
    trace = replace(resolve_trace("pollux-1").head(12), throughput="goodput")
    sim = Simulator(resolve_cluster("pollux-64"), trace, build_policy(policy),
                    SimConfig(restart_overhead=30.0), throughput=GoodputThroughputs())
    with cpu_limit(60):
        result = sim.run()
    assert all(j.status == "finished" for j in result.jobs)
    assert all(j.work_done == pytest.approx(j.work) for j in result.jobs)
    assert sim.core.rerater is not None and sim.core.rerater.rerated > 0


@pytest.mark.parametrize("policy", ["optimus", "elasticflow", "afs"])
def test_a_job_pinned_to_a_smaller_gpu_type_runs(policy: str) -> None:
    # elastic=all let the job grow to the whole cluster's 12 GPUs; placed only on its 4 T4s,
    # it never fitted and waited for good (the run stopped: "nothing could start").
    from builders import cluster_of, records_of, simulator

    from dlsched.cluster.cluster import Node

    cluster = cluster_of(Node("v", "V100", 8), Node("t", "T4", 4))
    jobs = [JobSpec("p", 0, 1, 1000.0, gpu_types=("T4",))]
    sim = simulator(policy, cluster, jobs)
    assert records_of(sim)["p"].status == "finished"
    assert {g for s in sim.core.segments.all() for g in s.gpus} <= {8, 9, 10, 11}
