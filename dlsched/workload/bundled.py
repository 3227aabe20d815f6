"""Trace samples shipped inside the package, by name (see ``dlsched/data/traces/README.md``).

``resolve_trace("pollux-3", None, options)`` reads a bundled sample; any other argument is a
path to a user's file, read with ``fmt`` or the detected format.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

from dlsched.errors import InputError, InputLocation
from dlsched.wording import did_you_mean
from dlsched.workload.readers.base import ReaderOptions, read_trace
from dlsched.workload.trace import Trace


@dataclass(frozen=True)
class BundledTrace:
    """A sample trace: its path under ``dlsched/data``, its format and what it is."""

    path: str
    format: str
    description: str

    def file(self) -> Path:
        return Path(str(resources.files("dlsched.data").joinpath(*self.path.split("/"))))


def _pollux(n: int) -> BundledTrace:
    return BundledTrace(f"traces/pollux/workload-{n}.csv", "pollux",
                        f"Pollux (OSDI'21) workload {n}: 160 jobs over 8 hours; Apache-2.0")


def _pollux_load(n: int, load: str) -> BundledTrace:
    jobs = round(160 * float(load))
    return BundledTrace(f"traces/pollux/load-{load}/workload-{n}.csv", "pollux",
                        f"Pollux (OSDI'21) workload {n} at {load}x job load: {jobs} jobs over 8 "
                        "hours; Apache-2.0")


BUNDLED_TRACES: dict[str, BundledTrace] = {
    "philly-sample": BundledTrace(
        "traces/philly/philly-sample.csv", "philly",
        "first 2,000 jobs of the Microsoft Philly trace (Jeon et al., ATC'19); CC-BY-4.0"),
    "philly-tiresias-2000": BundledTrace(
        "traces/philly/philly-tiresias-2000.csv", "philly",
        "first 2,000 Philly jobs from 2017-10-09 with <= 32 GPUs, by submit time (the "
        "tiresias-nsdi19 experiment's input); CC-BY-4.0"),
    **{f"pollux-{n}": _pollux(n) for n in range(1, 9)},
    **{f"pollux-{n}-load-{load}": _pollux_load(n, load) for load in ("0.5", "1.5", "2.0")
       for n in range(1, 9)},
    "elasticflow-195": BundledTrace(
        "traces/elasticflow/195job.csv", "elasticflow",
        "ElasticFlow (ASPLOS'23) testbed trace: 195 ITP jobs with deadlines; MIT"),
    "gavel-max-min-fairness": BundledTrace(
        "traces/gavel/max_min_fairness.trace", "gavel",
        "Gavel (OSDI'20) physical-cluster trace, max-min fairness experiment, 96 jobs; MIT"),
    "gavel-continuous-1000": BundledTrace(
        "traces/gavel/continuous-1000.trace", "gavel",
        "1,000 single-GPU jobs from Gavel's (OSDI'20) trace generator (seed 0, one every "
        "120 s on average, 1-4 h on a V100; the gavel-osdi20 experiment's input); MIT"),
    "chronus-mix2-4h": BundledTrace(
        "traces/chronus/trace_job_Philly_MIX2-4h.csv", "chronus",
        "Chronus (SoCC'21) MIX2 trace, jobs of its first 4 hours (strict, soft and best-effort "
        "deadlines); MIT"),
}


def resolve_trace(name_or_path: str, fmt: str | None = None,
                  options: ReaderOptions | None = None) -> Trace:
    """A bundled sample by name, else the file at that path (``fmt`` or detected)."""
    bundled = BUNDLED_TRACES.get(name_or_path)
    if bundled is not None:
        if fmt is not None and fmt != bundled.format:
            raise InputError(InputLocation(name_or_path),
                             f"bundled trace is in format {bundled.format!r}, not {fmt!r}")
        trace = read_trace(bundled.file(), bundled.format, options)
        return replace(trace, name=name_or_path)
    check_trace_names(name_or_path)
    return read_trace(Path(name_or_path), fmt, options)


def check_trace_names(names_or_paths: str) -> None:
    """Each comma-separated part a bundled trace or an existing file (nothing is read)."""
    for part in (p.strip() for p in names_or_paths.split(",") if p.strip()):
        if part == "synthetic" and not Path(part).exists():  # the CLI's --trace synthetic
            raise InputError(InputLocation(part), "made only by --trace synthetic alone (its "
                             "jobs drawn from --synthetic-from's trace); it cannot be one of "
                             "several traces nor a --synthetic-from source")
        if part not in BUNDLED_TRACES and not Path(part).exists():
            known = ", ".join(sorted(BUNDLED_TRACES))
            raise InputError(InputLocation(part),
                             f"no such file, and not a bundled trace (bundled: {known})"
                             + (did_you_mean(part, BUNDLED_TRACES) or OWN_HISTORY))


# Where a what-if replay's input comes from (docs/what-if.md): a missing --trace FILE said
# only "no such file" and listed the bundled traces, never how to get one's own history.
OWN_HISTORY = ("; a cluster's own history is written as a trace by `dlsched history export "
               "--out FILE` (a dlsched service), or read from a Slurm sacct or kubectl export "
               "(docs/what-if.md)")


def resolve_traces(names_or_paths: str, fmt: str | None = None,
                   options: ReaderOptions | None = None) -> Trace:
    """``resolve_trace`` for one name or path; for several, comma-separated (e.g. the five ITP
    cluster files), one trace of all their jobs: each job's id is prefixed with its trace's
    name, and a job of no queue (``default``) gets its trace's name as queue, so each file is
    a tenant queue (``dlsched tenants``). Each file keeps its own clock (rebased to its first
    job), so they start together; ``options.limit`` applies to each file."""
    parts = [part.strip() for part in names_or_paths.split(",") if part.strip()]
    if len(parts) == 1:
        return resolve_trace(parts[0], fmt, options)
    traces = [resolve_trace(part, fmt, options) for part in parts]
    models = {trace.throughput for trace in traces}
    if len(models) > 1:
        raise InputError(InputLocation(names_or_paths),
                         f"the traces need different throughput models ({sorted(models)}): "
                         "read them one at a time")
    names = [trace.name for trace in traces]
    if len(set(names)) < len(names):
        raise InputError(InputLocation(names_or_paths), f"two traces are named alike: {names}")
    jobs = tuple(replace(spec, job_id=f"{trace.name}/{spec.job_id}",
                         queue=trace.name if spec.queue == "default" else spec.queue)
                 for trace in traces for spec in trace.jobs)
    return Trace("+".join(names), jobs, source=names_or_paths,
                 format=",".join(dict.fromkeys(t.format for t in traces)),
                 throughput=traces[0].throughput, skipped=sum(t.skipped for t in traces),
                 warnings=tuple(w for t in traces for w in t.warnings))
