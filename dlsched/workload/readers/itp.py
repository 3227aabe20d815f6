"""Microsoft ITP cluster traces (2021), raw and as extended by ElasticFlow (ASPLOS'23).

``itp``: ``job_id,submission_time,duration,num_gpu`` (seconds from the trace start; the duration
was measured at ``num_gpu`` GPUs, so it is work in reference seconds).

``elasticflow``: the same jobs plus the fields ElasticFlow generated for them:
``num_iteration,model_name,deadline,batch_size``. ``deadline`` is absolute, on the clock of
``submission_time``; it is kept absolute (and shifted with the submit times when the trace is
rebased). ElasticFlow drew deadlines at 0.5-1.5x the duration after submission, so some cannot be
met at the requested GPU count: that is the point of its elastic scaling, not a data error.
``num_iteration`` is checked but not kept: the job's work is its measured duration, and
ElasticFlow's iteration counts belong to its own throughput profiles.
"""

from __future__ import annotations

from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import CsvRowReader, RowContext, register_reader

ITP_COLUMNS = ("job_id", "submission_time", "duration", "num_gpu")
ELASTICFLOW_COLUMNS = ("job_id", "submission_time", "num_iteration", "model_name", "deadline",
                       "batch_size", "num_gpu", "duration")


def _common(ctx: RowContext) -> dict[str, object]:
    return {"job_id": ctx.text("job_id"),
            "submit_time": ctx.number("submission_time", minimum=0),
            "num_gpus": ctx.integer("num_gpu", minimum=1),
            "work": ctx.number("duration", positive=True)}


def _itp_job(ctx: RowContext) -> JobSpec:
    return JobSpec(**_common(ctx))


def _elasticflow_job(ctx: RowContext) -> JobSpec:
    common = _common(ctx)
    ctx.integer("num_iteration", minimum=1)
    submit = common["submit_time"]
    deadline = ctx.number("deadline")
    if deadline <= submit:
        raise ctx.fail("deadline", f"must be after submission_time {submit:g}, got {deadline:g}")
    return JobSpec(**common, model=ctx.text("model_name"),
                   batch_size=ctx.integer("batch_size", minimum=1), deadline=deadline)


register_reader(CsvRowReader("itp", ITP_COLUMNS, _itp_job, gpu_field="num_gpu", id_field="job_id"))
register_reader(CsvRowReader("elasticflow", ELASTICFLOW_COLUMNS, _elasticflow_job,
                             gpu_field="num_gpu", id_field="job_id"))
