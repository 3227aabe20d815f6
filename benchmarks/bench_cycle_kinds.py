"""What a contended run's cycles are, and what they cost besides deciding (issue 14).

Run on demand: ``python benchmarks/bench_cycle_kinds.py [--policy tiresias:promote_knob=2]
[--jobs N] [--cluster philly-shared-512] [--floor | --skip-idle]``.

Kinds: each cycle is counted by what woke it (a starvation promotion, a demotion, an
arrival, a completion, another wake-up, or several of them at one time) and by what it
decided (starts, preemptions, nothing); beside them the waiting and running jobs at each
cycle and the jobs the cycle tried (``consider``). A kind of cycle that decides nothing is
one a cheap test could skip; one that decides something must be paid for.

``--floor``: the cost of everything but the decision. The run is made twice: once as usual,
keeping each cycle's ``CycleResult``, then again with the decision step (``run_cycle``)
answering the kept result at once. Both schedules are the same (the digests say so), so the
second run's CPU time is what the core spends on the rest (snapshot, apply, events, timeline)
however fast the decision were made: a floor for any lane or index that only makes the
decision cheaper. Under ``valgrind --tool=cachegrind`` the two runs' instructions give the
same split without the host's noise.

``--skip-idle``: the most that skipping the cycles that decide nothing could save, and what it
would change. The run is made twice: once as usual, noting the times of the cycles that
started, stopped, resized and rejected nothing (times with a cycle that did are left out),
then again with the decision step at those times answering at once, after asking only the
policy's wake-ups (they apply the demotions and promotions due: the next cycle must still be
armed). Printed: both runs' CPU time and digest, and the waiting jobs' reasons
(``Scheduler.reason_for``) compared after every ``--every``-th cycle that acted, at the same
time in both runs. Equal digests but differing reasons: such a skip is not exact (a skipped
cycle would have refreshed the futility memo and its jobs' reasons, which later cycles read).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import hashlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared/data/traces/philly/philly.csv"
TRIGGERS = ("promotion", "demotion", "arrival", "completion", "other wake-up")


def build(spec: str, trace_path: str, jobs: int | None, cluster_name: str) -> Any:
    """A simulator of ``spec`` (``policy:option=value,...``) over the trace's first ``jobs``."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator
    from dlsched.workload.readers.base import read_trace

    policy, _, option_text = spec.partition(":")
    options = dict(o.split("=", 1) for o in option_text.split(",") if o)
    trace = read_trace(trace_path)
    if jobs is not None:
        trace = dataclasses.replace(trace, jobs=trace.jobs[:jobs])
    return Simulator(resolve_cluster(cluster_name), trace, build_policy(policy, options),
                     SimConfig())


def digest(result: Any) -> str:
    """The digest ``bench_contended.py`` prints: equal digests, identical schedules."""
    return hashlib.sha256("".join(f"{r!r}\n" for r in sorted(
        result.jobs, key=lambda r: r.job_id)).encode()).hexdigest()[:16]


def counted(owner: Any, name: str, counts: collections.Counter, label: str,
            size: Callable[[Any], int] = lambda result: 1) -> None:
    """Wrap ``owner.name`` (an instance's attribute) to add ``size(its result)`` to
    ``counts[label]`` on each call."""
    original = getattr(owner, name)

    def wrapper(*args: Any) -> Any:
        result = original(*args)
        counts[label] += size(result)
        return result

    setattr(owner, name, wrapper)


def kinds(sim: Any) -> None:
    """Run ``sim``, counting its cycles by trigger and decision (module docstring)."""
    from dlsched.scheduling import cycle as cycle_module

    core, events = sim.core, collections.Counter()
    plugin = core.profile.queue_sort
    counted(core, "finish", events, "completion")
    counted(core, "submit", events, "arrival")
    counted(sim, "_handle", events, "wake-up", bool)
    if core._key_changes is not None:  # Tiresias' promotions: the snapshot asks them
        counted(core, "_key_changes", events, "promotion", len)
    tried = collections.Counter()
    counted(cycle_module._CycleRun, "consider", tried, "jobs")
    table: collections.Counter = collections.Counter()
    sizes: dict[str, list[int]] = {"waiting": [], "running": [], "tried": []}
    original = core.cycle

    def cycle() -> Any:
        demotions = getattr(plugin, "_demotion_count", 0)
        sizes["waiting"].append(len(core.waiting))
        sizes["running"].append(len(core.running))
        cycles = core.cycles
        result = original()
        if core.cycles == cycles:  # nothing waited: no cycle (``Scheduler.cycle``)
            sizes["waiting"].pop()
            sizes["running"].pop()
            events.clear()
            return result
        sizes["tried"].append(tried.pop("jobs", 0))
        if events.pop("wake-up", 0) and not events["promotion"]:
            demoted = getattr(plugin, "_demotion_count", 0) > demotions
            events["demotion" if demoted else "other wake-up"] += 1
        woke = "+".join(t for t in TRIGGERS if events[t]) or "none"
        decided = ("starts" if result.starts else "") + (
            "+preemptions" if result.preemptions else "")
        table[(woke, decided or "nothing")] += 1
        events.clear()
        return result

    core.cycle = cycle
    started = time.process_time()
    result = sim.run()
    print(f"{result.cycles:,} cycles, CPU {time.process_time() - started:.2f} s (counting "
          f"included), digest {digest(result)}")
    for (woke, decided), count in table.most_common():
        print(f"{count:>10,}  {count / result.cycles:6.1%}  woken by {woke:<28} {decided}")
    for name, values in sizes.items():
        array = np.array(values)
        print(f"{name:>8} jobs per cycle: mean {array.mean():.1f}, median "
              f"{np.median(array):.0f}, p90 {np.percentile(array, 90):.0f}, max {array.max()}")


@contextmanager
def decided_by(results: Iterator[Any]) -> Iterator[None]:
    """The core's decision step answers the given results in turn, at no cost."""
    from dlsched.scheduling import scheduler

    original = scheduler.run_cycle
    scheduler.run_cycle = lambda profile, snapshot: next(results)
    try:
        yield
    finally:
        scheduler.run_cycle = original


def floor(spec: str, trace: str, jobs: int | None, cluster: str) -> None:
    """The ``--floor`` measurement (module docstring)."""
    from dlsched.scheduling import scheduler

    kept: list[Any] = []
    original = scheduler.run_cycle

    def keeping(profile: Any, snapshot: Any) -> Any:
        kept.append(original(profile, snapshot))
        return kept[-1]

    runs = {}
    scheduler.run_cycle = keeping
    try:
        runs["whole"] = timed(build(spec, trace, jobs, cluster))
    finally:
        scheduler.run_cycle = original
    with decided_by(iter(kept)):
        runs["without the decision"] = timed(build(spec, trace, jobs, cluster))
    for label, (cpu, cycles, found) in runs.items():
        print(f"{label:>22}: CPU {cpu:7.2f} s, {cycles:,} cycles "
              f"({1e6 * cpu / max(cycles, 1):.0f} µs a cycle), digest {found}")
    print(f"the rest is {runs['without the decision'][0] / runs['whole'][0]:.1%} of the run")


def skip_idle(spec: str, trace: str, jobs: int | None, cluster: str, every: int) -> None:
    """The ``--skip-idle`` measurement (module docstring)."""
    from dlsched.scheduling import scheduler
    from dlsched.scheduling.decisions import CycleResult
    from dlsched.scheduling.state import CycleState

    original = scheduler.run_cycle
    idle: set[float] = set()
    acting: set[float] = set()

    def noting(profile: Any, snapshot: Any) -> Any:
        result = original(profile, snapshot)
        acted = result.starts or result.preemptions or result.resizes or result.rejections
        (acting if acted else idle).add(snapshot.now)
        return result

    def skipping(profile: Any, snapshot: Any) -> Any:
        if snapshot.now not in idle:
            return original(profile, snapshot)
        # the snapshot's read-only books, as the Tiresias lane's scratchpad: no copy to pay
        state = CycleState(snapshot, snapshot.free, snapshot.node_free)
        wakeups = [w for p in profile.wakeups if (w := p.next_wakeup(state)) is not None]
        return CycleResult(next_wakeup=min(wakeups) if wakeups else None)

    runs = []
    for label, decide in (("whole", noting), ("idle cycles skipped", skipping)):
        sim = build(spec, trace, jobs, cluster)
        reasons = sampled_reasons(sim.core, every)
        scheduler.run_cycle = decide
        try:
            cpu, cycles, found = timed(sim)
        finally:
            scheduler.run_cycle = original
        runs.append(reasons)
        if label == "whole":
            idle.difference_update(acting)
            print(f"{len(idle):,} times with only cycles that decided nothing")
        print(f"{label:>20}: CPU {cpu:7.2f} s, {cycles:,} cycles, digest {found}")
    compared = differing = 0
    for now, kept in runs[0].items():
        other = runs[1].get(now, {})
        compared += len(kept)
        differing += sum(reason != other.get(job_id) for job_id, reason in kept.items())
    print(f"reasons compared at {len(runs[0]):,} times: {compared:,}, differing {differing:,}")


def sampled_reasons(core: Any, every: int) -> dict[float, dict[str, str]]:
    """Wrap ``core.cycle`` to keep, after every ``every``-th cycle that started or stopped a
    job, each waiting job's reason by job id; the kept ones by time."""
    kept: dict[float, dict[str, str]] = {}
    original, seen = core.cycle, [0]

    def cycle() -> Any:
        result = original()
        if result.starts or result.preemptions:
            seen[0] += 1
            if seen[0] % every == 0:
                kept[core.clock.now()] = {job.job_id: core.reason_for(job)
                                          for job in core.waiting.values()}
        return result

    core.cycle = cycle
    return kept


def timed(sim: Any) -> tuple[float, int, str]:
    started = time.process_time()
    result = sim.run()
    return time.process_time() - started, result.cycles, digest(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policy", default="tiresias:promote_knob=2")
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    parser.add_argument("--cluster", default="philly-shared-512")
    parser.add_argument("--floor", action="store_true", help="the cost besides deciding")
    parser.add_argument("--skip-idle", action="store_true",
                        help="the cost of the cycles that decide nothing, and their effect")
    parser.add_argument("--every", type=int, default=50,
                        help="--skip-idle: compare reasons after every N-th acting cycle")
    args = parser.parse_args()
    if args.floor:
        floor(args.policy, args.trace, args.jobs, args.cluster)
    elif args.skip_idle:
        skip_idle(args.policy, args.trace, args.jobs, args.cluster, args.every)
    else:
        kinds(build(args.policy, args.trace, args.jobs, args.cluster))


if __name__ == "__main__":
    main()
