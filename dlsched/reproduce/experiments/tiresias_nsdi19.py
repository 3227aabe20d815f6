"""Tiresias (Gu et al., NSDI'19) §6 simulation: FIFO, discretized 2D-LAS (dlas-gpu) and
shortest-remaining-time on 2,000 Philly jobs, 32 nodes x 4 GPUs.

References: the Tiresias artifact's own simulator run on the same input (the bundled
``philly-tiresias-2000``; ``benchmarks/side_by_side.py tiresias`` repeats it). dlsched runs each
policy in the ``tiresias-nsdi19`` setting.
"""

from __future__ import annotations

from collections.abc import Iterator

from dlsched.reproduce.registry import (
    ExperimentOptions,
    chosen_policies,
    register_experiment,
    whole_option,
)
from dlsched.reproduce.rows import Measured
from dlsched.reproduce.simulate import run_setting

POLICIES = ("fifo", "tiresias", "srtf")
TRACE = "philly-tiresias-2000"


@register_experiment(
    "tiresias-nsdi19", "Tiresias NSDI'19: mean JCT of FIFO, 2D-LAS and SRTF on 2,000 Philly "
    "jobs (32 x 4 GPUs), against the Tiresias artifact's simulator", cases=(TRACE,),
    options={"policies": "comma-separated subset of fifo,tiresias,srtf",
             "limit": "read only the first N jobs (a fast subset)"},
    pooled=True)
def tiresias_nsdi19(options: ExperimentOptions) -> Iterator[Measured]:
    policies = chosen_policies(options.options.get("policies"), POLICIES)
    limit = whole_option(options.options, "limit", None)
    for case in options.cases:
        for policy in policies:
            summary = run_setting("tiresias-nsdi19", policy, case, options, case,
                                  limit=limit)
            yield Measured(case, policy, "jct_mean_s", summary.jct_mean)
            yield Measured(case, policy, "makespan_s", summary.makespan)
