"""The core's fast lane (fast_start.py) decides exactly what the full cycle decides: same
records, timeline and run segments with and without it, on random workloads where jobs arrive
together, wait behind full pools and start in bursts."""

from __future__ import annotations

import random

import pytest
from builders import make_cluster, make_job, simulator

import dlsched.scheduling.scheduler as scheduler_module
from dlsched.scheduling.fast_start import lane_applies
from dlsched.scheduling.registry import build_policy
from dlsched.workload.job import JobSpec


def _workload(seed: int, jobs: int = 120) -> list[JobSpec]:
    rng = random.Random(seed)
    specs = []
    for i in range(jobs):
        at = round(rng.uniform(0, 4000) / 100) * 100  # several jobs arrive at once
        builder = (make_job(f"j{i:03d}").at(at).gpus(rng.choice([1, 1, 1, 2, 4, 8]))
                   .work(rng.expovariate(1 / 900)))
        if rng.random() < 0.5:
            builder = builder.pool(rng.choice(["a", "b"]))
        if rng.random() < 0.3:
            builder = builder.queue(rng.choice(["q1", "q2"]))
        specs.append(builder.build())
    return specs


def _run(policy: str, placement: str | None, specs: list[JobSpec], lane: bool,
         monkeypatch: pytest.MonkeyPatch) -> tuple:
    policy, _, option = policy.partition(":")
    options = dict([option.split("=")]) if option else None
    with monkeypatch.context() as patch:
        if not lane:
            patch.setattr(scheduler_module, "lane_applies", lambda profile: False)
        cluster = make_cluster(nodes=4, gpus=4, nvlink=2, racks=2, pools=["a", "a", "b", "b"])
        sim = simulator(policy, cluster, specs, options=options, placement=placement)
        assert (sim.core._lane is not None) == lane
        core, cycle, waits = sim.core, sim.core.cycle, []

        def cycle_and_note_reasons() -> object:  # why each job waits, after every cycle
            result = cycle()
            waits.append([(job.job_id, core.reason_for(job)) for job in core.waiting.values()])
            return result

        patch.setattr(core, "cycle", cycle_and_note_reasons)
        result = sim.run()
    records = sorted((r.job_id, r.status, r.first_start, r.finish_time, r.gpu_seconds,
                      r.pending_reason) for r in result.jobs)
    timeline = result.timeline
    return (records, timeline.times, timeline.used_gpus, timeline.waiting, timeline.running,
            sim.core.segments.all(), result.cycles, waits)


@pytest.mark.parametrize(("policy", "placement"), [
    ("fifo", None), ("fifo:strict=false", None), ("sjf", None), ("fifo", "spread"),
    ("fifo", "best-fit"), ("fifo", "topology"),
    # Reserve and wake-ups driven by the lane (``lane_safe``): demotions and preemptions
    ("tiresias:thresholds=600", None), ("tiresias:same_queue_preemption=true", None),
    ("tiresias:thresholds=600", "spread")])
@pytest.mark.parametrize("seed", [0, 1])
def test_fast_lane_gives_the_same_run(policy: str, placement: str | None, seed: int,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    specs = _workload(seed)
    assert (_run(policy, placement, specs, True, monkeypatch)
            == _run(policy, placement, specs, False, monkeypatch))


def test_only_plain_profiles_take_the_lane() -> None:
    assert lane_applies(build_policy("fifo").instantiate())
    assert lane_applies(build_policy("sjf").instantiate())
    assert lane_applies(build_policy("tiresias").instantiate())
    for policy in ("backfill", "gandiva"):
        assert not lane_applies(build_policy(policy).instantiate()), policy
    for option in ({"promote_knob": "2"}, {"min_runtime": "60"}):  # keys change, protection
        assert not lane_applies(build_policy("tiresias", option).instantiate()), option


def test_strict_fifo_blocked_queues_stay_in_the_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """Under strict FIFO the lane decides the cycles where a queue's head does not fit (the
    run above checks they decide as the full cycle does): no full cycle runs."""
    specs = _workload(2, jobs=60)
    full = []
    real = scheduler_module.run_cycle
    monkeypatch.setattr(scheduler_module, "run_cycle",
                        lambda profile, snapshot: full.append(1) or real(profile, snapshot))
    blocked = []
    real_note = scheduler_module.Scheduler.note_reasons
    monkeypatch.setattr(scheduler_module.Scheduler, "note_reasons",
                        lambda core, reasons: blocked.append(len(reasons))
                        or real_note(core, reasons))
    cluster = make_cluster(nodes=4, gpus=4, nvlink=2, racks=2, pools=["a", "a", "b", "b"])
    simulator("fifo", cluster, specs).run()
    assert not full
    assert sum(blocked) > 10  # heads that did not fit, told by the lane


def test_tiresias_jobs_the_memo_fails_stay_in_the_lane(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs whose memo says they fail again (nothing changed on their nodes) are passed over
    by the lane with their reason as it was, as the full cycle passes them over (the run test
    above checks the decisions and reasons agree): most cycles with such jobs need no full
    cycle."""
    from dlsched.scheduling.fast_start import FastLane

    passed: list[str] = []
    real = FastLane._still_futile
    monkeypatch.setattr(FastLane, "_still_futile", lambda lane, job: (
        (reason := real(lane, job)) is not None and passed.append(job.job_id) or reason))
    specs = _workload(2, jobs=300)
    on, off = (_run("tiresias:thresholds=600", None, specs, lane, monkeypatch)
               for lane in (True, False))
    assert on == off
    assert len(passed) > 20
