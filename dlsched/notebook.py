"""The Python API for notebooks and scripts: ``dlsched.simulate``, ``dlsched.compare``.

The same code path as ``dlsched simulate`` / ``compare``: the keywords are ``RunConfig``'s
fields (the CLI's options), checked by the same rules, and each run goes through
``experiment.run_policy``, which writes the CLI's files. The tables a run returns are read back
from those files, so ``simulate(...).jobs`` is the CLI's ``jobs.csv`` for the same arguments.
Without ``out=`` the files go to a temporary folder that is removed afterwards.

    import dlsched
    run = dlsched.simulate(trace="philly-sample", cluster="philly", policy="tiresias", limit=200)
    run.summary["jct_mean"], run.jobs.head(), run.timeline.plot(x="time", y="used_gpus")
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dlsched.run_config import RunConfig
from dlsched.wording import count_of, duration_text

if TYPE_CHECKING:
    import pandas as pd

    from dlsched.experiment import RunOutcome

_FIELDS = frozenset(f.name for f in fields(RunConfig))
# the run files' text columns: read as text even when every value looks like a number (Slurm
# job ids, a queue named 2024, a version 1.0) or every cell is empty (no job pending)
TEXT_COLUMNS = ("job_id", "queue", "status", "pending_reason", "policy", "trace", "cluster",
                "version")


@dataclass(frozen=True)
class SimulationRun:
    """One policy's run: ``summary`` (``summary.json`` as a dict), ``jobs`` (``jobs.csv``, or
    ``jobs.parquet``) and ``timeline`` (``timeline.csv``) as DataFrames; ``out_dir`` is where
    the files are (None when they went to a temporary folder)."""

    policy: str
    summary: dict[str, Any]
    jobs: pd.DataFrame
    timeline: pd.DataFrame
    config: RunConfig
    out_dir: Path | None = None

    def _repr_html_(self) -> str:  # a notebook shows the summary, not the whole table
        return (f"<b>dlsched {self.policy}</b> on {self.config.trace} / {self.config.cluster}: "
                f"{_outcome(self.summary)}")

    def __repr__(self) -> str:  # the dataclass's would print both tables and the config
        where = "" if self.out_dir is None else f", files in {self.out_dir}"
        return (f"<SimulationRun {self.policy} on {self.config.trace} / {self.config.cluster}: "
                f"{_outcome(self.summary)}{where}>")


@dataclass(frozen=True)
class Comparison:
    """Several policies on the same work: ``runs`` by policy, ``summary`` one row per policy,
    ``report`` the HTML report's path (None without ``out=``)."""

    runs: dict[str, SimulationRun]
    summary: pd.DataFrame
    report: Path | None = None
    config: RunConfig = field(default_factory=RunConfig)

    def __getitem__(self, policy: str) -> SimulationRun:
        return self.runs[policy]

    def __repr__(self) -> str:
        report = "" if self.report is None else f", report {self.report}"
        lines = [f"<Comparison on {self.config.trace} / {self.config.cluster}{report}:"]
        lines += [f"  {name}: {_outcome(run.summary)}" for name, run in self.runs.items()]
        return "\n".join(lines) + ">"


def run_config(options: Mapping[str, Any], base: RunConfig | None = None) -> RunConfig:
    """``options`` (``RunConfig`` field names; ``policy_options`` may be a dict, ``policies``
    a list or comma-separated text) on top of ``base`` (default: the defaults), checked."""
    unknown = sorted(set(options) - _FIELDS)
    if unknown:
        raise TypeError(_unknown_option(unknown[0]))
    return (base or RunConfig()).with_values(dict(options), lambda key: key)


def _unknown_option(key: str, names: Iterable[str] = _FIELDS) -> str:
    """The message for a keyword that is no option: the closest of ``names`` (the keywords
    the function takes), then all of them."""
    from difflib import get_close_matches

    close = get_close_matches(key, sorted(names), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown option {key!r}{hint}; the options are {', '.join(sorted(names))}"


def simulate(trace: str | Path | None = None, cluster: str | Path | None = None,
             policy: str | None = None, *, out: str | Path | None = None,
             config: str | Path | None = None, **options: Any) -> SimulationRun:
    """Simulate ``policy`` on ``trace`` and ``cluster``, as ``dlsched simulate`` does; every
    option of the CLI is a keyword (``seed=``, ``limit=``, ``policy_options={"k": "v"}``,
    ``placement=``, ``tenants=``...). ``config``: a run file, as ``--config``: what it says
    holds unless a keyword is given. Not given and not in a file: ``philly-sample``,
    ``philly``, ``fifo`` (the command's defaults)."""
    if "policies" in options:  # it replaced ``policy``: policy="srtf" ran fifo unsaid
        raise TypeError("simulate runs one policy=NAME; policies= is dlsched.compare's")
    unknown = sorted(set(options) - _FIELDS)
    if unknown:  # simulate's own keyword is policy=, not the field policies= (refused above)
        raise TypeError(_unknown_option(unknown[0], _FIELDS - {"policies"} | {"policy"}))
    given = {**_named(trace, cluster), **options, **_out(out)}
    if policy is not None:
        given["policies"] = (policy,)
    run = _config(config, given)
    if len(run.policies) != 1:
        raise ValueError("simulate runs one policy; use dlsched.compare for several")
    with run_folder(out) as folder:
        outcome = execute_runs(run, folder, compare=False)[0]
        return _loaded(outcome, run, None if out is None else folder)


def compare(trace: str | Path | None = None, cluster: str | Path | None = None,
            policies: Iterable[str] | str | None = None, *,
            out: str | Path | None = None, config: str | Path | None = None,
            workers: int | None = 1, **options: Any) -> Comparison:
    """Run several policies on the same trace and cluster, as ``dlsched compare`` does; with
    ``out`` the folders and ``report.html`` are written there. ``workers``: policies run at
    the same time on processes of their own (None: one per policy, at most one per CPU, as
    the command does; the default 1 runs them one after another in this process). Not given
    and not in a ``config`` file: ``philly-sample``, ``philly``, ``fifo,tiresias``."""
    import pandas as pd

    from dlsched.experiment import write_comparison

    if policies is None and config is None:
        policies = ("fifo", "tiresias")
    given = {**_named(trace, cluster), **options, **_out(out)}
    if policies is not None:  # text as the command reads it: "fifo, srtf," is two
        given["policies"] = policies if isinstance(policies, str) else tuple(policies)
    run = _config(config, given)
    with run_folder(out) as folder:
        outcomes = execute_runs(run, folder, compare=True, workers=workers)
        report = None
        if out is not None:
            title = f"dlsched: {', '.join(run.policies)} on {run.trace} / {run.cluster}"
            report = write_comparison(outcomes, folder, title, run)
        # keyed by the names asked for (the CLI's folders): a run's own label can differ
        # (``fifo+tenants`` with ``tenants=``)
        runs = {name: _loaded(o, run, None if out is None else o.out_dir)
                for name, o in zip(run.policies, outcomes, strict=True)}
    table = pd.DataFrame([r.summary for r in runs.values()],
                         index=pd.Index(list(runs), name="policy"))
    return Comparison(runs, table, report, run)


def _named(trace: str | Path | None, cluster: str | Path | None) -> dict[str, str]:
    """The trace and cluster given (a run file's hold where they are not: with ``config=``,
    simulate's defaults ran philly-sample on philly with fifo whatever the file said)."""
    given = {"trace": trace, "cluster": cluster}
    return {key: str(value) for key, value in given.items() if value is not None}


def _out(out: str | Path | None) -> dict[str, str]:
    """``out`` as the run's option: its ``config.yaml`` says where it was written, as the
    command's does (it said ``out: runs/latest`` whatever ``out=`` was)."""
    return {} if out is None else {"out": str(out)}


def _config(config: str | Path | None, given: dict[str, Any]) -> RunConfig:
    if config is None:
        return run_config(given)
    unknown = sorted(set(given) - _FIELDS)
    if unknown:
        raise TypeError(_unknown_option(unknown[0]))
    return RunConfig.from_yaml(Path(config), given)


@contextmanager
def run_folder(out: str | Path | None) -> Iterator[Path]:
    """The run's folder: ``out`` itself, checked as the command checks ``--out`` before the
    run (a file there was a FileExistsError once the simulation had run), or a temporary one
    removed afterwards. A run that raises leaves no empty folder it made."""
    if out is not None:
        from dlsched.experiment import out_checked

        with out_checked(Path(out), "out"):
            yield Path(out)
        return
    with tempfile.TemporaryDirectory(prefix="dlsched-") as folder:
        yield Path(folder)


def execute_runs(config: RunConfig, out: Path, compare: bool, workers: int | None = 1
                 ) -> list[RunOutcome]:
    """What the CLI's ``_run_all`` does, with warnings instead of console lines; ``workers``
    as for ``compare``."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.cluster.warnings import unknown_gpu_types
    from dlsched.experiment import (
        check_run,
        input_warnings,
        known_model,
        load_trace,
        refuse_services,
        run_policy,
    )

    refuse_services(config)
    if config.throughput is not None:  # before the trace, whose reading would name the flag
        known_model(config.throughput, "throughput")
    cluster = resolve_cluster(config.cluster)
    for warning in unknown_gpu_types(cluster, config.cluster):
        warnings.warn(warning, stacklevel=3)
    trace = load_trace(config, cluster)
    for warning in input_warnings(config, trace, cluster):
        warnings.warn(warning, stacklevel=3)
    check_run(config, lambda key: key)  # the keyword the user typed, not the CLI's flag
    if trace.skipped:
        warnings.warn(f"skipped {count_of(trace.skipped, 'invalid row')} (first: "
                      f"{trace.warnings[0]})",
                      stacklevel=3)
    for note in trace.warnings[trace.skipped:]:  # rows the reader left out, by reason
        warnings.warn(note, stacklevel=3)

    def out_of(policy: str) -> Path:
        return out / policy if compare else out

    if workers is None:
        from dlsched.compare_pool import default_workers

        workers = default_workers(len(config.policies))
    if workers > 1 and len(config.policies) > 1:
        from dlsched.compare_pool import run_policies

        return run_policies(config, config.policies, trace, cluster, out_of, workers,
                            lambda policy, progress: None, lambda policy, outcome: None)
    return [run_policy(config, policy, trace, cluster, out_of(policy))
            for policy in config.policies]


def _loaded(outcome: RunOutcome, config: RunConfig, out_dir: Path | None) -> SimulationRun:
    folder = outcome.out_dir
    return SimulationRun(outcome.summary.policy, outcome.summary.to_dict(),
                         read_jobs(folder), read_table(folder / "timeline.csv"),
                         config, out_dir)


def read_jobs(folder: Path) -> pd.DataFrame:
    """A run folder's jobs table (``jobs.parquet`` if the run wrote one, else ``jobs.csv``)."""
    import pandas as pd

    parquet = folder / "jobs.parquet"
    if parquet.exists():
        return pd.read_parquet(parquet)
    return read_table(folder / "jobs.csv")


def read_table(path: Path) -> pd.DataFrame:
    """A CSV the run wrote: an empty cell is NaN (only an empty one: a job id ``NA`` is
    text), ``TEXT_COLUMNS`` are strings."""
    import pandas as pd

    return pd.read_csv(path, dtype=dict.fromkeys(TEXT_COLUMNS, str), keep_default_na=False,
                       na_values=[""])


def _outcome(summary: Mapping[str, Any]) -> str:
    return (f"{summary.get('jobs_finished')}/{summary.get('jobs_submitted')} jobs finished, "
            f"mean JCT {duration_text(summary.get('jct_mean'))}")
