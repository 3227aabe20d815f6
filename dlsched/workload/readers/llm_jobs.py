"""LLM training jobs that declare a model and a token target, not a GPU count (``llm-jobs``):
the input of the ``llm-size`` policy (docs/policies/llm-size.md).

A CSV with a header. Required columns: ``job_id``, ``submit_time`` (seconds; the trace is
rebased to its first job), ``model`` (a built-in model of ``perf/llm/models.py``, e.g.
``llama2-70b``), ``tokens`` (tokens to train: the job's work is ``ceil(tokens / (global batch x
sequence length))`` iterations) and ``gpu_type`` (a type the ``llm`` throughput model has a
fabric for: A100, A100-80G, H100). Optional: ``max_gpus`` (the most GPUs it may be given;
empty: 1,024, and never more than the cluster has) and ``queue``. Each row is
``perf/llm/sizes.model_job``: an elastic job whose bounds are the smallest and largest sizes at
which the planner finds a configuration that fits in GPU memory; its size at start is the
smallest (jobs.csv's ``num_gpus``; its ``min_gpus``/``max_gpus`` columns give the range and
``last_gpus`` the size ``llm-size`` ran it at). The trace needs the ``llm`` throughput model.
"""

from __future__ import annotations

from pathlib import Path

from dlsched.errors import ConfigError
from dlsched.perf.llm.models import BUILTIN_MODELS
from dlsched.perf.llm.sizes import model_job
from dlsched.perf.llm.throughput import FABRICS
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.base import (
    ReaderOptions,
    RowContext,
    collect,
    iter_csv_rows,
    register_reader,
)
from dlsched.workload.trace import Trace

REQUIRED = ("job_id", "submit_time", "model", "tokens", "gpu_type")
OPTIONAL = ("max_gpus", "queue")
DEFAULT_MAX_GPUS = 1024  # model_job's


def _job(ctx: RowContext, cluster_gpus: int | None) -> JobSpec:
    job_id, model, gpu_type = ctx.text("job_id"), ctx.text("model"), ctx.text("gpu_type")
    assert job_id is not None and model is not None and gpu_type is not None
    if model not in BUILTIN_MODELS:
        raise ctx.fail("model", f"unknown model {model!r} (known: "
                                f"{', '.join(sorted(BUILTIN_MODELS))})")
    if gpu_type not in FABRICS:
        raise ctx.fail("gpu_type", f"the llm throughput model knows no {gpu_type} nodes "
                                   f"(known: {', '.join(sorted(FABRICS))})")
    tokens = ctx.number("tokens", positive=True)
    asked = ctx.integer("max_gpus", optional=True, minimum=1)
    most = min(asked or DEFAULT_MAX_GPUS, cluster_gpus or DEFAULT_MAX_GPUS)
    try:
        return model_job(job_id, model, float(tokens or 0), ctx.number("submit_time", minimum=0)
                         or 0.0, gpu_type, most, ctx.text("queue", optional=True) or "default")
    except ConfigError as exc:  # fits on no size up to ``most``
        raise ctx.fail("max_gpus" if asked is not None else "model",
                       str(exc).removeprefix(f"job {job_id}: ")) from None


class LlmJobsReader:
    name = "llm-jobs"
    columns = frozenset(REQUIRED)

    def read(self, path: Path, options: ReaderOptions) -> Trace:
        rows = iter_csv_rows(path, REQUIRED, allow_extra=frozenset(OPTIONAL))
        collector = collect(path, options, rows, lambda ctx: _job(ctx, options.max_gpus),
                            gpu_field="model", id_field="job_id")
        return collector.trace(path.stem, self.name, "llm")


register_reader(LlmJobsReader())
