"""The sizes an LLM job can run at, and the one a sizing policy picks.

A job that declares its model and how many tokens to train (``model_job``) has no GPU count of
its own: every size of whole nodes (and 1, 2, 4 GPUs below a node) at which the planner finds a
configuration that fits in GPU memory is feasible (``planner.py``: tensor parallelism inside a
node, memory checked), each with its iteration time. ``pick_size`` applies the scale-out rule
of Or, Zhang & Freedman ("Resource Elasticity in Distributed Deep Learning", MLSys'20, §3.2):
add workers while the scaling efficiency stays above a threshold, i.e. the largest size whose
throughput per GPU is at least ``efficiency`` times the best per-GPU throughput of any feasible
size, among those that fit the room there is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.errors import ConfigError
from dlsched.perf.llm.iteration import Estimate
from dlsched.perf.llm.models import BUILTIN_MODELS
from dlsched.perf.llm.throughput import FABRICS, best_estimate
from dlsched.workload.job import JobSpec, WorkUnit

EFFICIENCY = 0.9


@dataclass(frozen=True, slots=True)
class SizeOption:
    gpus: int
    estimate: Estimate

    @property
    def iterations_per_second(self) -> float:
        return 1.0 / self.estimate.iteration_seconds

    @property
    def per_gpu(self) -> float:
        return self.iterations_per_second / self.gpus


def feasible_sizes(model: str, gpu_type: str, low: int, high: int) -> list[SizeOption]:
    """Sizes in ``[low, high]`` with a configuration that fits, smallest first."""
    fabric = FABRICS.get(gpu_type)
    if fabric is None or model not in BUILTIN_MODELS:
        return []
    node = fabric.gpus_per_node
    high = min(high, fabric.num_gpus)
    sizes = [n for n in (1, 2, 4) if n < node] + list(range(node, high + 1, node))
    options = []
    for n in sizes:
        if low <= n <= high and (best := best_estimate(model, n, gpu_type)) is not None:
            options.append(SizeOption(n, best))
    return options


def pick_size(options: list[SizeOption], room: int, efficiency: float = EFFICIENCY,
              best: float | None = None) -> SizeOption | None:
    """The largest option within ``room`` GPUs whose per-GPU throughput is at least
    ``efficiency`` of the best (``best``, else the best option's; None: no efficient option
    fits)."""
    if not options:
        return None
    best = max(o.per_gpu for o in options) if best is None else best
    fitting = [o for o in options if o.gpus <= room and o.per_gpu >= efficiency * best]
    return max(fitting, key=lambda o: o.gpus) if fitting else None


def model_job(job_id: str, model: str, tokens: float, submit_time: float = 0.0,
              gpu_type: str = "H100", max_gpus: int = 1024, queue: str = "default") -> JobSpec:
    """A job that declares its model and a token target, not a GPU count: its work is the
    iterations of the model's global batch that reach ``tokens``; its GPU bounds are the
    smallest and largest feasible sizes up to ``max_gpus`` (a sizing policy picks within them,
    e.g. ``llm-size``)."""
    llm = BUILTIN_MODELS.get(model)
    if llm is None:
        raise ConfigError(f"job {job_id}: unknown model {model!r} (known: "
                          f"{', '.join(sorted(BUILTIN_MODELS))})")
    if not tokens > 0:
        raise ConfigError(f"job {job_id}: tokens must be > 0, got {tokens}")
    if gpu_type not in FABRICS:
        raise ConfigError(f"job {job_id}: the llm throughput model knows no {gpu_type} nodes "
                          f"(known: {', '.join(sorted(FABRICS))})")
    options = feasible_sizes(model, gpu_type, 1, max_gpus)
    if not options:
        raise ConfigError(f"job {job_id}: {model} fits on no size up to {max_gpus} {gpu_type}")
    iterations = math.ceil(tokens / (llm.global_batch * llm.seq_len))
    return JobSpec(job_id, submit_time, options[0].gpus, work=float(iterations),
                   work_unit=WorkUnit.ITERATIONS, queue=queue, gpu_types=(gpu_type,),
                   model=model, min_gpus=options[0].gpus, max_gpus=options[-1].gpus)
