"""The progress bar moves for small traces (issue 11 item 9: it stayed at 0/160 for 17 s under
Pollux, reported only every 500 finished jobs) and says where a round-based run stands."""

from __future__ import annotations

from dataclasses import replace

from dlsched.cluster.builtin import resolve_cluster
from dlsched.scheduling.registry import build_policy
from dlsched.sim.progress import SimProgress
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace


def _run(policy: str, jobs: int, interval: float) -> list[SimProgress]:
    full = resolve_trace("pollux-1")
    seen: list[SimProgress] = []
    sim = Simulator(resolve_cluster("pollux-64"), replace(full, jobs=full.jobs[:jobs]),
                    build_policy(policy), SimConfig(), progress=seen.append,
                    progress_interval=interval)
    sim.run()
    return seen


def test_a_round_based_run_reports_before_any_job_finishes() -> None:
    seen = _run("optimus", 20, interval=0.0)  # a report after every cycle
    assert len(seen) > 20 and seen[0].finished == 0 and seen[0].total == 20
    assert seen[-1].finished == 20 and seen[-1].waiting == seen[-1].running == 0
    times = [p.now for p in seen]
    assert times == sorted(times) and times[-1] > times[0]
    assert any(p.running and not p.finished for p in seen)
    assert seen[0].describe().startswith("t=0.00 h, ")


def test_reports_are_throttled_by_wall_time() -> None:
    seen = _run("fifo", 20, interval=3600.0)
    assert [(p.finished, p.total) for p in seen] == [(20, 20)]  # the last one only
