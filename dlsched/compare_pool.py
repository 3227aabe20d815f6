"""A comparison's policies run at the same time on local processes (``dlsched compare
--workers N``, ``dlsched.compare(..., workers=N)``).

Each policy's run is independent and deterministic, so a worker runs exactly what the serial
loop runs (``run_policy`` on the same trace, cluster and options) and writes the same files
into ``OUT/<policy>/``; the parent takes each run's outcome back (pickled: ~20 MB for the whole
Philly table, a few hundredths of a second) for the comparison's report and ``summary.json``.
Workers are forked where the platform can and this process runs no other thread (a fork
copies a lock another thread may hold): they start with dlsched imported and the trace
already read (``initargs`` are inherited, not pickled). Otherwise (an embedding program with
threads, a platform without fork) they come from a fork server or are spawned, and the trace
is sent to them. A worker reports its run's progress through a queue the parent reads
while it waits. The warnings a run gives (a job that crawls under failures, data missing) are
caught in the worker and given again here, in the policies' order, each just before its run's
outcome: a warning that the serial loop gives once per command (Python's registry of the
code that warns keeps one per text) is not printed once per worker.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.cpus import available_cpus
from dlsched.errors import DlschedError
from dlsched.run_config import RunConfig

if TYPE_CHECKING:
    from dlsched.cluster.cluster import Cluster
    from dlsched.experiment import RunOutcome
    from dlsched.sim.progress import SimProgress
    from dlsched.workload.trace import Trace

OnProgress = Callable[[str, "SimProgress"], None]
OnDone = Callable[[str, "RunOutcome"], None]
POLL_SECONDS = 0.1  # how often the parent passes the workers' progress on while it waits


def _nothing(policy: str, outcome: RunOutcome) -> None:
    """No ``in_order`` callback."""


def pool_context() -> BaseContext:
    """How worker processes start: forked when the platform can and no other thread runs
    here; else from a fork server (started clean), else spawned."""
    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def share_cpus(workers: int) -> None:
    """A worker's BLAS thread pools (OpenBLAS, MKL) capped at its share of the CPUs. Each
    would otherwise keep a thread per CPU, busy-waiting between calls: with two workers on two
    cores, ``dlsched reproduce pollux-osdi21`` took 64-173 CPU s instead of 31 (its policies
    fit models with numpy and scipy), a worker's first run 70 s instead of 1. Called first in
    every worker process: the pools already loaded are capped now (threadpoolctl), and those
    loaded later in the worker (scipy's own OpenBLAS, when a policy first imports it) read the
    cap from this process's environment as they load."""
    from threadpoolctl import threadpool_limits

    share = max(1, available_cpus() // max(1, workers))
    for name in BLAS_THREADS:
        os.environ[name] = str(share)
    threadpool_limits(limits=share)


def default_workers(policies: int) -> int:
    """One process per policy, at most one per CPU this process may use."""
    return max(1, min(policies, available_cpus()))


@dataclass(frozen=True)
class RunFailed:
    """A worker's run ended in a ``DlschedError`` (sent back as text: an exception class
    with its own constructor arguments may not survive pickling)."""

    message: str


@dataclass(frozen=True)
class CaughtWarning:
    """A warning a worker's run gave, as text and where it was given (a warning instance
    may not survive pickling)."""

    text: str
    category: type[Warning]
    filename: str
    lineno: int

    @classmethod
    def of(cls, caught: warnings.WarningMessage) -> CaughtWarning:
        return cls(str(caught.message), caught.category, caught.filename, caught.lineno)

    def give(self) -> None:
        """Warn here as the run warned there: with the filters of this process and the
        registry of the module that warned, the one the serial loop fills (so a text it has
        shown once, for one policy, is not shown again for the next)."""
        module, registry = _module_at(self.filename)
        warnings.warn_explicit(self.text, self.category, self.filename, self.lineno,
                               module=module, registry=registry)


def _module_at(filename: str) -> tuple[str | None, dict[Any, Any] | None]:
    """The name and warning registry of the loaded module in ``filename``; (None, None)
    (no registry: shown every time) when no loaded module is there."""
    for name, module in list(sys.modules.items()):
        if getattr(module, "__file__", None) == filename:
            return name, vars(module).setdefault("__warningregistry__", {})
    return None, None


@dataclass(frozen=True)
class _Ran:
    """A worker's run: its outcome (or failure) and the warnings it gave."""

    result: RunOutcome | RunFailed
    warned: tuple[CaughtWarning, ...]


class _Worker:
    """What a worker process holds, set once by the pool's initializer."""

    trace: Trace | None = None
    cluster: Cluster | None = None
    progress: Any = None  # the queue the parent reads


def _init(trace: Trace, cluster: Cluster, progress: Any, workers: int) -> None:
    share_cpus(workers)
    _Worker.trace, _Worker.cluster, _Worker.progress = trace, cluster, progress
    # Progress is for a bar only: a worker that ends does not wait for reports the parent
    # has stopped reading (a full pipe would otherwise hold its exit, and the pool's).
    progress.cancel_join_thread()


def _run(config: RunConfig, policy: str, out: str) -> _Ran:
    with warnings.catch_warnings(record=True) as caught:
        result = _run_caught(config, policy, out)
    return _Ran(result, tuple(CaughtWarning.of(warning) for warning in caught))


def _run_caught(config: RunConfig, policy: str, out: str) -> RunOutcome | RunFailed:
    from dlsched.experiment import run_policy

    assert _Worker.trace is not None and _Worker.cluster is not None
    sink = _Worker.progress

    def report(progress: SimProgress) -> None:
        sink.put((policy, progress))

    try:
        return run_policy(config, policy, _Worker.trace, _Worker.cluster, Path(out),
                          progress=report)
    except DlschedError as exc:
        return RunFailed(str(exc))


def run_policies(config: RunConfig, policies: Sequence[str], trace: Trace, cluster: Cluster,
                 out_of: Callable[[str], Path], workers: int, on_progress: OnProgress,
                 on_done: OnDone, in_order: OnDone = _nothing) -> list[RunOutcome]:
    """Run ``policies`` on ``workers`` processes (``PolicyRuns``)."""
    runs = PolicyRuns(config, policies, trace, cluster, out_of, workers)
    try:
        return runs.collect(on_progress, on_done, in_order)
    finally:
        runs.close()


class PolicyRuns:
    """Every policy's run submitted to a pool of ``workers`` processes. They start (are
    forked) here, so that a caller makes this before any thread of its own (a progress bar's
    refresh thread would make ``pool_context`` choose a fork server: ~0.5 s more)."""

    def __init__(self, config: RunConfig, policies: Sequence[str], trace: Trace,
                 cluster: Cluster, out_of: Callable[[str], Path], workers: int) -> None:
        self.policies = tuple(policies)
        context = pool_context()
        self.progress = context.Queue()
        workers = max(1, min(workers, len(self.policies)))
        self.pool = ProcessPoolExecutor(max_workers=workers, mp_context=context,
                                        initializer=_init,
                                        initargs=(trace, cluster, self.progress, workers))
        self.futures: dict[Future[_Ran], str] = {}
        try:
            for policy in self.policies:  # the first submit forks every worker
                self.futures[self.pool.submit(_run, config, policy,
                                              str(out_of(policy)))] = policy
        except BaseException:
            self.close()
            raise

    def collect(self, on_progress: OnProgress, on_done: OnDone,
                in_order: OnDone = _nothing) -> list[RunOutcome]:
        """Wait for every run; ``on_progress`` and ``on_done`` are called in this process as
        the workers report, ``in_order`` in the policies' order as soon as a run and those
        before it are done, after the warnings that run gave (``CaughtWarning.give``). The
        outcomes in the order of the policies; the first run that fails gives its warnings
        and raises its ``DlschedError`` (``close`` then starts no other)."""
        outcomes: dict[str, RunOutcome] = {}
        warned: dict[str, tuple[CaughtWarning, ...]] = {}
        pending = set(self.futures)
        while pending:
            finished, pending = wait(pending, timeout=POLL_SECONDS,
                                     return_when=FIRST_COMPLETED)
            _pass_on(self.progress, on_progress)
            for future in finished:
                ran = future.result()
                policy = self.futures[future]
                if isinstance(ran.result, RunFailed):
                    _give(ran.warned)
                    raise DlschedError(f"{policy}: {ran.result.message}")
                outcomes[policy], warned[policy] = ran.result, ran.warned
                on_done(policy, ran.result)
                self._in_order(outcomes, warned, in_order)
        return [outcomes[policy] for policy in self.policies]

    def _in_order(self, outcomes: dict[str, RunOutcome],
                  warned: dict[str, tuple[CaughtWarning, ...]], in_order: OnDone) -> None:
        """Each done run whose policies before it are all done and passed on, in order."""
        for policy in self.policies:
            if policy not in outcomes:
                return
            if policy in warned:  # not passed on yet
                _give(warned.pop(policy))
                in_order(policy, outcomes[policy])

    def close(self) -> None:
        """Stop the pool (runs not started are not started) and its progress queue."""
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.progress.close()
        self.progress.join_thread()


def _give(caught: Sequence[CaughtWarning]) -> None:
    for warning in caught:
        warning.give()


def _pass_on(progress: Any, on_progress: OnProgress) -> None:
    """Every progress report the workers have sent so far (the latest per policy is what a
    bar shows, but each is cheap to pass on)."""
    while True:
        try:
            policy, report = progress.get_nowait()
        except queue.Empty:
            return
        on_progress(policy, report)
