"""SRTF's and EDF's waiting jobs say which running jobs they may not preempt and by what rule
(``Preemption.wait_detail``, as Tiresias' ``[tiresias] not preempted: ...``). Before session
34 such a job read only "needs 4 GPUs, 0 free on fitting nodes", as if room alone were
missing, while it could preempt and did not because the running jobs rank at or above it."""

from __future__ import annotations

from builders import make_cluster, make_job, simulator

from dlsched.workload.job import JobSpec

NEEDS = "[placement] needs 4 GPUs, none free on fitting nodes; "
SRTF_RULE = ("it preempts only jobs with more remaining time, or as much and submitted later")


def _reason(policy: str, jobs: list[JobSpec], options: dict[str, str] | None = None,
            until: float = 5.0) -> str:
    result = simulator(policy, make_cluster(nodes=1, gpus=4), jobs, options=options,
                       max_time=until).run()
    return {r.job_id: r.pending_reason for r in result.jobs}["w"]


def test_srtf_names_the_running_jobs_with_no_more_remaining_time() -> None:
    """At 1 s, "a" (2 GPUs) has 99 s left, "b" (2 GPUs) 299 s; "w" (4 GPUs, 150 s) may evict
    only "b", which frees too little: neither is evicted."""
    jobs = [make_job("a").at(0).gpus(2).work(100).build(),
            make_job("b").at(0).gpus(2).work(300).build(),
            make_job("w").at(1).gpus(4).work(150).build()]
    assert _reason("srtf", jobs) == (
        NEEDS + "[srtf] not preempted: 1 running job with no more remaining time (2 GPUs); "
        + SRTF_RULE)


def test_srtf_names_the_jobs_its_min_runtime_protects() -> None:
    """Both running jobs have more remaining time than "w", but started 1 s before it and are
    protected for 20 s."""
    jobs = [make_job("a").at(0).gpus(2).work(300).build(),
            make_job("b").at(0).gpus(2).work(300).build(),
            make_job("w").at(1).gpus(4).work(150).build()]
    assert _reason("srtf", jobs, {"min_runtime": "20"}) == (
        NEEDS + "[srtf] not preempted: 2 running jobs started less than min_runtime 20 s "
        "ago (4 GPUs); "
        + SRTF_RULE + ", once they ran min_runtime 20 s")


def test_edf_names_the_running_jobs_with_no_later_deadline() -> None:
    jobs = [make_job("a").at(0).gpus(2).work(100).deadline(200).build(),
            make_job("b").at(0).gpus(2).work(100).deadline(300).build(),
            make_job("w").at(1).gpus(4).work(10).deadline(250).build()]
    assert _reason("edf", jobs) == (
        NEEDS + "[edf] not preempted: 1 running job with no later deadline (2 GPUs); it "
        "preempts only jobs with a later deadline (none is the latest), or as late and "
        "submitted later")


def test_a_preempted_job_names_the_job_that_evicted_it() -> None:
    """"w" (deadline 250) evicts both jobs of deadline 300 at 1 s and runs; at the next cycle
    (an arrival at 3 s), each of them waits behind it, which it may not preempt."""
    jobs = [make_job("a").at(0).gpus(2).work(100).deadline(300).build(),
            make_job("b").at(0).gpus(2).work(100).deadline(300).build(),
            make_job("w").at(1).gpus(4).work(10).deadline(250).build(),
            make_job("c").at(3).gpus(1).work(10).deadline(400).build()]
    result = simulator("edf", make_cluster(nodes=1, gpus=4), jobs, max_time=5.0).run()
    by_id = {r.job_id: r for r in result.jobs}
    assert by_id["w"].first_start == 1.0 and by_id["a"].preemptions == 1
    assert by_id["a"].pending_reason == (
        "[placement] needs 2 GPUs, none free on fitting nodes; [edf] not preempted: 1 running "
        "job with no later deadline (4 GPUs); it preempts only jobs with a later deadline "
        "(none is the latest), or as late and submitted later")
