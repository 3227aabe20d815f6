"""Map duration-only jobs (Philly) to Gavel job types, so they run under the ``gavel`` model.

The rule is the one Gavel's trace generator applies to Philly's ``(duration, num_gpus)`` pairs
(Narayanan et al., OSDI'20 §7.1; ``philly_job_distribution.csv`` in Gavel's artifact, and its
``generate_job``): each job keeps its arrival time, GPU count (Gavel's scale factor) and queue,
and gets a Gavel job type drawn uniformly at random, with a seeded generator, from the types
that can run at that GPU count (a type measured only on one GPU, such as A3C, CycleGAN and the
Recommendation models, is drawn only for one-GPU jobs); its work becomes
``duration x steps/s of that type on the reference GPU type (V100) at that GPU count``, so the
job would take its Philly duration on V100s. Draws follow the trace's order (submit time, id),
so the same trace and seed always give the same types.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dlsched.perf.gavel_table import GavelThroughputs, JobType
from dlsched.perf.model import Placement
from dlsched.wording import count_of
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.trace import Trace

REFERENCE_TYPE = "V100"


def eligible_types(model: GavelThroughputs, num_gpus: int) -> tuple[JobType, ...]:
    """Job types with a rate > 0 at ``num_gpus`` on the reference type; for more than one GPU,
    only types measured at a scale factor above 1 (Gavel's distributed job types)."""
    found = []
    for model_name, batch in model.job_types():
        spec = JobSpec("probe", 0, num_gpus, 1.0, WorkUnit.ITERATIONS, model=model_name,
                       batch_size=batch)
        curve = model.curve(model.job_type(spec), REFERENCE_TYPE)
        distributed = any(scale > 1 and rate > 0 for scale, rate in curve.items())
        if (num_gpus == 1 or distributed) and _rate(model, spec) > 0:
            found.append((model_name, batch))
    return tuple(found)


def _rate(model: GavelThroughputs, spec: JobSpec) -> float:
    return model.rate(spec, Placement.single_node(REFERENCE_TYPE, spec.num_gpus))


def to_gavel_types(trace: Trace, seed: int, model: GavelThroughputs | None = None) -> Trace:
    """``trace`` with every job given a Gavel job type and its work in steps (see the module
    docstring). Jobs must be duration-based (``REFERENCE_SECONDS``); a ``ValueError`` names
    the first one that is not, or whose GPU count no job type can run at."""
    model = model or GavelThroughputs()
    rng = np.random.default_rng(seed)
    choices: dict[int, tuple[JobType, ...]] = {}
    jobs = []
    for spec in trace.jobs:
        if spec.work_unit is not WorkUnit.REFERENCE_SECONDS:
            raise ValueError(f"trace {trace.name}: job {spec.job_id} has work in "
                             f"{spec.work_unit.value}, not a duration to map")
        options = choices.setdefault(spec.num_gpus, eligible_types(model, spec.num_gpus))
        if not options:
            raise ValueError(f"trace {trace.name}: job {spec.job_id}: no Gavel job type runs "
                             f"on {count_of(spec.num_gpus, 'GPU')}")
        name, batch = options[int(rng.integers(len(options)))]
        typed = replace(spec, model=name, batch_size=batch, work_unit=WorkUnit.ITERATIONS)
        jobs.append(replace(typed, work=spec.work * _rate(model, typed)))
    return replace(trace, name=f"{trace.name}-gavel-types-seed{seed}", jobs=tuple(jobs),
                   source=f"{trace.source or trace.name}, mapped to Gavel job types "
                          f"(seed {seed})", throughput="gavel")
