"""The ``llm`` throughput model: an LLM job declares its model (``JobSpec.model``, a built-in
of ``perf/llm/models.py``) and its work in iterations; its rate on ``n`` GPUs is one over the
iteration time of the planner's best configuration for ``n`` GPUs of its type (0 when no
configuration fits). Other jobs scale linearly, as duration traces do.

Fabrics by GPU type (the placement names the type, not the cluster): A100 (80 GB, and 40 GB with
its own memory and HBM bandwidth) as Selene, H100 as Llama 3's cluster (``reference.py``);
nodes of 8.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from dlsched.perf.llm.hardware import GPU_SPECS, Fabric
from dlsched.perf.llm.iteration import Estimate
from dlsched.perf.llm.models import BUILTIN_MODELS
from dlsched.perf.llm.parallel import MODERN
from dlsched.perf.llm.planner import plan
from dlsched.perf.llm.reference import LLAMA3_H100, SELENE
from dlsched.perf.model import LinearScaling, Placement
from dlsched.workload.job import JobSpec

# A100 (40 GB) nodes are DGX A100s like Selene's with half the memory: planned on Selene's
# 80 GB, an LLM job on them ran configurations that need up to 80 GB a GPU.
FABRICS: dict[str, Fabric] = {"A100-80G": SELENE, "A100": replace(SELENE, gpu=GPU_SPECS["A100"]),
                              "H100": LLAMA3_H100}


@functools.cache
def best_estimate(model: str, gpus: int, gpu_type: str, tp: int = 1) -> Estimate | None:
    """The fastest configuration on ``gpus`` GPUs; with ``tp`` > 1 (the job's
    ``tensor_parallel``), the fastest with that tensor-parallel degree (None: none fits)."""
    fabric = FABRICS.get(gpu_type)
    if fabric is None or model not in BUILTIN_MODELS:
        return None
    found = plan(BUILTIN_MODELS[model], gpus, fabric, MODERN, limit=1 if tp == 1 else None)
    if tp > 1:
        found = [e for e in found if e.config.tp == tp]
    return found[0] if found else None


def iterations_per_second(model: str, gpus: int, gpu_type: str, tp: int = 1) -> float:
    """One over the iteration time of ``best_estimate`` (0 when no configuration fits)."""
    best = best_estimate(model, gpus, gpu_type, tp)
    return 1.0 / best.iteration_seconds if best is not None else 0.0


class LlmThroughput(LinearScaling):
    name = "llm"

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        if spec.model not in BUILTIN_MODELS:
            return super().rate(spec, placement)
        if not placement.gpu_types:
            return 0.0
        return iterations_per_second(spec.model, len(placement.gpu_types),
                                     placement.gpu_types[0], spec.tensor_parallel)

    def reference_rate(self, spec: JobSpec) -> float:
        if spec.model not in BUILTIN_MODELS:
            return super().reference_rate(spec)
        types = [t for t in FABRICS if spec.gpu_types == () or t in spec.gpu_types]
        return max(iterations_per_second(spec.model, spec.num_gpus, t, spec.tensor_parallel)
                   for t in types)
