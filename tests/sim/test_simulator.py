"""Simulator runs end to end: jobs that can never fit, time limits, run metadata."""

from __future__ import annotations

import pytest
from builders import cpu_limit, make_cluster, make_job, run, simulator

from dlsched.workload.job import JobSpec

CORE_POLICIES = ["fifo", "sjf", "srtf", "backfill", "tiresias"]


def _with_unfit_jobs() -> list[JobSpec]:
    return [make_job("huge").gpus(16).at(0).build(),
            make_job("wrong-type").types("A100").at(0).build(),
            make_job("small").at(1).work(10).build()]


# Two 4-GPU V100 nodes: "huge" (16 GPUs) and "wrong-type" (A100 only) can never run; they fail
# at submission with a reason. "small" runs at 1 -> 11.
@pytest.mark.parametrize("policy", ["sjf", "srtf", "backfill", "tiresias"])
def test_jobs_that_never_fit_fail_at_submission_with_a_reason(policy: str) -> None:
    records = run(policy, make_cluster(nodes=2, gpus=4), _with_unfit_jobs())
    assert records["huge"].status == records["wrong-type"].status == "failed"
    assert "needs 16 GPUs, the nodes it may use have 8" in records["huge"].pending_reason
    assert "needs 1 GPU, the nodes it may use have 0" in records["wrong-type"].pending_reason
    assert "([gpu-type] no node passes this filter)" in records["wrong-type"].pending_reason
    assert (records["small"].first_start, records["small"].finish_time) == (1.0, 11.0)


def test_an_llm_job_no_configuration_of_which_fits_says_so() -> None:
    """llama2-70b on 8 A100-80G: no configuration fits, the llm model rates it 0 on every
    type; the reason said only 'the nodes it may use have 0' on a cluster of 3,072 GPUs."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.perf.llm.throughput import LlmThroughput
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator
    from dlsched.workload.job import JobSpec, WorkUnit
    from dlsched.workload.trace import Trace

    spec = JobSpec("j", 0.0, 8, work=10.0, work_unit=WorkUnit.ITERATIONS, model="llama2-70b",
                   gpu_types=("A100-80G",))
    result = Simulator(resolve_cluster("megatron-selene"), Trace("t", (spec,), throughput="llm"),
                       build_policy("fifo"), SimConfig(), throughput=LlmThroughput()).run()
    reason = result.jobs[0].pending_reason
    assert reason.startswith("can never run: needs 8 GPUs, the nodes it may use have 0 ")
    assert "[runnable] the throughput model rates it 0 on every GPU type left" in reason


def test_job_that_never_fits_does_not_block_strict_fifo_forever() -> None:
    records = run("fifo", make_cluster(nodes=2, gpus=4), _with_unfit_jobs())
    assert records["small"].status == "finished"


# One GPU, FIFO, jobs of 100 s back to back: stopping at 150 leaves one finished, one running,
# one pending.
def test_max_time_stops_the_run() -> None:
    jobs = [make_job(f"j{i}").at(0).work(100).build() for i in range(3)]
    records = run("fifo", make_cluster(nodes=1, gpus=1), jobs, max_time=150)
    assert [records[j].status for j in ("j0", "j1", "j2")] == ["finished", "running", "pending"]
    assert records["j1"].first_start == 100.0 and records["j1"].finish_time is None


def test_result_says_what_made_it() -> None:
    sim = simulator("tiresias", make_cluster(nodes=1, gpus=2, name="tiny"),
                    [make_job("a").build()], options={"thresholds": "100:1000"},
                    placement="spread", restart_overhead=12.0, seed=7)
    with cpu_limit(20):
        info = sim.run().info
    assert (info.policy, info.trace, info.cluster, info.seed) == ("tiresias", "test", "tiny", 7)
    assert info.policy_options == (("thresholds", "100:1000"),)
    assert (info.placement, info.restart_overhead) == ("spread", 12.0)
    assert info.version
