"""MIG job lists, format ``mig``: ``job_id,submit_time,duration,mig_profile`` (the CSV of
``dlsched mig``, ``dlsched/mig/run.py``). Each row is a one-worker job on a MIG instance of
``mig_profile`` (``3g.20gb`` or ``3g``; A100/H100 profiles), ``work`` = ``duration`` in
reference seconds. In ``dlsched simulate`` the core places the instances (``dlsched/mig/book.py``)
and ``summary.json`` gets a ``mig`` section. An unknown profile is an error naming the file,
line and field."""

from __future__ import annotations

from dlsched.mig.profiles import UnknownMigProfile, profile_share
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import CsvRowReader, RowContext, register_reader

COLUMNS = ("job_id", "submit_time", "duration", "mig_profile")


def _job(ctx: RowContext) -> JobSpec:
    profile = ctx.text("mig_profile")
    assert profile is not None
    try:
        share = profile_share(profile)
    except UnknownMigProfile as exc:
        raise ctx.fail("mig_profile", str(exc)) from None
    return JobSpec(job_id=ctx.text("job_id") or "", submit_time=ctx.number("submit_time",
                                                                           minimum=0) or 0.0,
                   num_gpus=1, work=_duration(ctx), gpu_share=share, mig_profile=profile)


def _duration(ctx: RowContext) -> float:
    """``duration`` in seconds; ``inf``, which ``dlsched mig`` takes (an instance held to the
    end), is refused saying why (it read only "not a finite number: 'inf'")."""
    if (ctx.text("duration") or "").strip().lower() in ("inf", "+inf", "infinity"):
        raise ctx.fail("duration", "'inf' is for `dlsched mig` alone: a simulated run ends when "
                                   "every job has, so give this job's seconds")
    return ctx.number("duration", positive=True) or 0.0


register_reader(CsvRowReader("mig", COLUMNS, _job, gpu_field="mig_profile", id_field="job_id"))
