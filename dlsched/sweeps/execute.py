"""Running a sweep's runs: serially, on local processes, or as Ray tasks; resumable.

A finished run leaves ``OUT/done/KEY.json`` (its row: labels and summary metrics), written by
the driver the moment the run's result arrives, atomically (a temporary file renamed). A sweep
started again on the same ``OUT`` skips every run whose key has such a file, so a sweep that
was killed, or a grid that grew, redoes nothing it finished. Local runs also keep their full
output folder (``OUT/runs/KEY/``: ``jobs.csv``, ``timeline.csv``...); Ray tasks run on other
machines and send back only the row.
"""

from __future__ import annotations

import functools
import json
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.errors import ConfigError, DlschedError
from dlsched.run_config import RunConfig
from dlsched.sweeps.grid import SweepRun

OnDone = Callable[[SweepRun, dict[str, Any]], None]
OnWarning = Callable[[str], None]
Result = tuple[dict[str, Any], tuple[str, ...]]  # a run's metrics and the warnings it gave


class RunFailed(DlschedError):
    """A run of the sweep raised: the message names the run."""


def run_one(config: RunConfig, folder: str | None) -> dict[str, Any]:
    """One run through the CLI's code path; its summary's scalar metrics. ``folder``: where
    to write its files (None: a temporary folder, removed)."""
    from dlsched.notebook import execute_runs, run_folder

    with run_folder(folder) as out:
        outcome = execute_runs(config, out, compare=False)[0]
    summary = outcome.summary.to_dict()
    return {k: v for k, v in summary.items() if v is None or isinstance(v, int | float | str)}


def run_noting(config: RunConfig, folder: str | None) -> Result:
    """``run_one``, with the texts of the warnings the run gave (its inputs' warnings: a
    policy that can livelock, a GPU type no node has...), sent back with its metrics: a run on
    another process or machine cannot print them where the sweep's user reads."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        metrics = run_one(config, folder)
    return metrics, tuple(dict.fromkeys(str(w.message) for w in caught))


@dataclass
class DoneStore:
    """``OUT/done/KEY.json`` per finished run."""

    root: Path

    @property
    def folder(self) -> Path:
        return self.root / "done"

    def row(self, key: str) -> dict[str, Any] | None:
        path = self.folder / f"{key}.json"
        if not path.exists():
            return None
        try:
            return json.loads(path.read_text())
        except (json.JSONDecodeError, OSError):  # never half-written (renamed), but be safe
            return None

    def save(self, key: str, row: dict[str, Any]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        temp = self.folder / f".{key}.{os.getpid()}.tmp"
        temp.write_text(json.dumps(row, sort_keys=True, allow_nan=False) + "\n")
        os.replace(temp, self.folder / f"{key}.json")


def pending(runs: Sequence[SweepRun], store: DoneStore) -> list[SweepRun]:
    """The runs to do: not finished before, each key once."""
    todo: dict[str, SweepRun] = {}
    for run in runs:
        if run.key not in todo and store.row(run.key) is None:
            todo[run.key] = run
    return list(todo.values())


def execute(runs: Sequence[SweepRun], store: DoneStore, workers: int,
            ray_address: str | None, on_done: OnDone,
            on_warning: OnWarning | None = None) -> int:
    """Run what is pending; ``on_done`` after each run's row is saved, ``on_warning`` once for
    each distinct warning the runs gave (before that run's ``on_done``; None: they are
    dropped). Returns the number of runs executed."""
    todo = pending(runs, store)
    if not todo:
        return 0
    if ray_address is not None:
        results = _on_ray(todo, ray_address)
    elif workers <= 1:  # named as a worker's failure is: the message said no run
        results = ((run, _result(run, functools.partial(run_noting, run.config,
                                                        _folder(store, run))))
                   for run in todo)
    else:
        results = _on_processes(todo, store, workers)
    said: set[str] = set()
    for run, (metrics, notes) in results:
        row = {"key": run.key, **metrics}
        store.save(run.key, row)
        for note in notes:
            if on_warning is not None and note not in said:
                said.add(note)
                on_warning(note)
        on_done(run, row)
    return len(todo)


def _folder(store: DoneStore, run: SweepRun) -> str:
    return str(store.root / "runs" / run.key)


def _on_processes(todo: list[SweepRun], store: DoneStore,
                  workers: int) -> Iterator[tuple[SweepRun, Result]]:
    """Runs on ``workers`` local processes (forked where the platform can and no other thread
    runs here: the workers start with dlsched already imported), yielded as each finishes."""
    from dlsched.compare_pool import pool_context, share_cpus

    context = pool_context()
    workers = min(workers, len(todo))
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=share_cpus,
                               initargs=(workers,))
    try:
        futures: dict[Future[Result], SweepRun] = {
            pool.submit(run_noting, run.config, _folder(store, run)): run for run in todo}
        while futures:
            finished, _ = wait(futures, return_when=FIRST_COMPLETED)
            for future in finished:
                run = futures.pop(future)
                yield run, _result(run, future.result)
    finally:  # a failed run stops the sweep: the runs not started are not started
        pool.shutdown(wait=True, cancel_futures=True)


def _on_ray(todo: list[SweepRun], address: str) -> Iterator[tuple[SweepRun, Result]]:
    """Runs as Ray tasks (one CPU each) on the cluster at ``address`` (``auto``: the one this
    machine belongs to), yielded as each finishes. dlsched must be importable on its nodes."""
    from dlsched.extras import require

    require("ray", "dlsched sweep --ray-address")
    import ray

    if not ray.is_initialized():
        _join(ray, address)
    remote = ray.remote(num_cpus=1)(run_noting)
    refs = {remote.remote(run.config, None): run for run in todo}
    while refs:
        finished, _ = ray.wait(list(refs), num_returns=1)
        for ref in finished:
            run = refs.pop(ref)
            yield run, _result(run, lambda ref=ref: ray.get(ref))


def _join(ray: Any, address: str) -> None:
    """``ray.init`` at ``address``, failing in one line as ``serve --executor ray`` does: no
    Ray at ``auto`` was a 40-line ConnectionError traceback, nothing listening at HOST:PORT
    minutes of Ray's own retry warnings."""
    from dlsched.runtime.executors.ray_cluster import check_reachable

    check_reachable(address)
    try:
        ray.init(address=address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise ConfigError(f"--ray-address {address}: cannot connect: {exc}") from None


def _result(run: SweepRun, get: Callable[[], Result]) -> Result:
    try:
        return get()
    except DlschedError as exc:
        raise RunFailed(f"run {_describe(run)}: {exc}") from exc
    except Exception as exc:  # a Ray task error wraps the cause
        cause = getattr(exc, "cause", None)
        if isinstance(cause, DlschedError):
            raise RunFailed(f"run {_describe(run)}: {cause}") from exc
        raise


def _describe(run: SweepRun) -> str:
    return ", ".join(f"{k}={v}" for k, v in run.labels.items())
