"""Pollux (OSDI'21) and Sia (SOSP'23) workloads, format ``pollux``.

Columns ``name,time,application,num_replicas,batch_size``: a job name (kept as its id), its
submission in seconds, one of Pollux's six applications (bert, cifar10, deepspeech2, imagenet,
ncf, yolov3), the GPUs asked for and the global batch size. The CSV gives no duration, so
``work`` is the application's training run at that size on Pollux's T4 testbed, in reference
seconds (``pollux_profile.PolluxProfile.reference_seconds``: steps to finish x measured seconds
per step). The trace's throughput model is ``pollux`` (``dlsched.perf.pollux_table``): a job on
its requested GPUs packed onto 4-GPU nodes runs exactly that long, and faster or slower on other
placements as Pollux's measured step times say.

The Sia artifact's workloads share this schema and read the same way; they are not bundled
(no license file upstream).
"""

from __future__ import annotations

from pathlib import Path

from dlsched.wording import count_of
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    ReaderOptions,
    RowContext,
    collect,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.readers.pollux_profile import PolluxProfile, load_profile
from dlsched.workload.trace import Trace

COLUMNS = ("name", "time", "application", "num_replicas", "batch_size")


class PolluxReader:
    name = "pollux"
    columns = frozenset(COLUMNS)

    def __init__(self, profiles_dir: Path | None = None) -> None:
        self.profiles_dir = profiles_dir  # None: the bundled profile

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        profile = load_profile(self.profiles_dir)
        rows = iter_csv_rows(path, COLUMNS)
        collector = collect(path, options, rows, lambda ctx: _job(ctx, profile),
                            gpu_field="num_replicas", id_field="name")
        return collector.trace(path.stem, self.name, throughput="pollux")


def _job(ctx: RowContext, profile: PolluxProfile) -> JobSpec:
    app = ctx.text("application")
    if app not in profile.applications:
        known = ", ".join(sorted(profile.applications))
        raise ctx.fail("application", f"no profile for {app!r} (known: {known})")
    replicas = ctx.integer("num_replicas", minimum=1)
    batch_size = ctx.integer("batch_size", minimum=1)
    if batch_size not in profile.batch_sizes(app):
        raise ctx.fail("batch_size", f"{app} has no profile at batch size {batch_size} "
                                     f"(known: {profile.batch_sizes(app)})")
    if replicas not in profile.replica_counts(app):
        raise ctx.fail("num_replicas", f"{app} has no step times for {count_of(replicas, 'GPU')} "
                                       f"(known: {profile.replica_counts(app)})")
    return JobSpec(job_id=ctx.text("name"), submit_time=ctx.number("time", minimum=0),
                   num_gpus=replicas, work=profile.reference_seconds(app, batch_size, replicas),
                   model=app, batch_size=batch_size)


register_reader(PolluxReader())
