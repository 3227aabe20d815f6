"""An experiment's simulations at the same time on local processes (``dlsched reproduce
--workers N``).

An experiment is a short generator that calls ``run_setting`` once per cell and combines the
summaries as it goes (means over workloads, ratios of policies). To run its cells in parallel
without splitting every experiment into a plan and a combiner, the runner goes through it
twice. The first pass records the runs it asks for, each answered with a stand-in summary whose
measures are undefined, and drops what it yields; the recorded runs then go to a pool of
processes; the second pass answers each run from their summaries and yields the rows. A run the
second pass asks that the first did not record (an experiment that chose a run by an earlier
result, or whose first pass stopped on a stand-in) is run then, in this process. The rows thus
never depend on the first pass, only the time does: they are the rows of one serial pass.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dlsched.reproduce.registry import Experiment, ExperimentOptions, quiet
from dlsched.reproduce.rows import Measured

if TYPE_CHECKING:
    from dlsched.report.metrics import Summary

RunKey = tuple[str, str, str, str, tuple[tuple[str, Hashable], ...]]
Run = Callable[[], "Summary"]


def run_key(setting: str, policy: str, trace: str, case: str,
            overrides: dict[str, Any]) -> RunKey:
    return setting, policy, trace, case, tuple(sorted(overrides.items()))


@dataclass
class SettingRuns:
    """How ``run_setting`` is answered: recorded (the first pass) or from the pool's
    summaries (the second)."""

    recording: bool = True
    asked: dict[RunKey, tuple[str, str, str, str, dict[str, Any]]] = field(default_factory=dict)
    done: dict[RunKey, Summary] = field(default_factory=dict)

    def answer(self, key: RunKey, call: tuple[str, str, str, str, dict[str, Any]],
               run: Run) -> Summary:
        if self.recording:
            self.asked.setdefault(key, call)
            return stand_in(call[1], call[2])
        found = self.done.get(key)
        return found if found is not None else run()


def stand_in(policy: str, trace: str) -> Summary:
    """A summary whose measures are all undefined (the first pass reads nothing from it)."""
    from dlsched.report.metrics import Summary

    return Summary(policy=policy, trace=trace, cluster="", seed=0, version="",
                   jobs_submitted=0, jobs_finished=0, jobs_unfinished=0, jct_mean=None,
                   jct_median=None, jct_p95=None, jct_p99=None, queueing_delay_mean=None,
                   queueing_delay_p99=None, makespan=None, utilization=None, preemptions=0,
                   gpu_hours=0.0, cycles=0, cycle_ms_mean=None, wall_seconds=0.0,
                   policy_options=(), placement="", restart_overhead=0.0)


def measure(experiment: Experiment, options: ExperimentOptions, workers: int
            ) -> Iterable[Measured]:
    """The experiment's rows, its ``run_setting`` runs on ``workers`` processes."""
    runs = SettingRuns()
    try:
        for _ in experiment.run(replace(options, runs=runs, log=quiet)):
            pass
    except Exception:  # noqa: BLE001 - a stand-in read as a number: the second pass redoes it
        pass
    runs.recording = False
    if len(runs.asked) > 1:
        runs.done = _run_all(runs.asked, options, workers)
    return list(experiment.run(replace(options, runs=runs)))


def _run_all(asked: dict[RunKey, tuple[str, str, str, str, dict[str, Any]]],
             options: ExperimentOptions, workers: int) -> dict[RunKey, Summary]:
    """Every recorded run on the pool; each logged as it ends (the serial pass's lines)."""
    from dlsched.compare_pool import pool_context, share_cpus

    context = pool_context()
    sent = replace(options, runs=None, log=quiet)  # picklable, and quiet in the workers
    done: dict[RunKey, Summary] = {}
    workers = min(workers, len(asked))
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=share_cpus,
                             initargs=(workers,)) as pool:
        futures: dict[Future[Summary], RunKey] = {
            pool.submit(_one, sent, *call): key for key, call in asked.items()}
        for future in as_completed(futures):
            key = futures[future]
            try:
                done[key] = summary = future.result()
            except Exception:  # noqa: BLE001 - the second pass runs it and raises there
                continue
            options.log(describe(key[3], key[1], summary))
    return done


def _one(options: ExperimentOptions, setting: str, policy: str, trace: str, case: str,
         overrides: dict[str, Any]) -> Summary:
    from dlsched.reproduce.simulate import run_setting

    return run_setting(setting, policy, trace, options, case, **overrides)


def describe(case: str, policy: str, summary: Summary) -> str:
    """The line a finished run logs."""
    return (f"{case} {policy}: mean JCT {summary.jct_mean or 0:,.0f} s, "
            f"{summary.wall_seconds:.1f} s")
