"""ElasticFlow (Gu et al., "ElasticFlow: An Elastic Serverless Training Platform for Distributed
Deep Learning", ASPLOS'23) §6.2, Figure 6(b): the deadline satisfactory ratio of ElasticFlow,
EDF, Gandiva, Tiresias, Themis and Chronus on its 128-GPU testbed (16 nodes of 8 A100) with its
195-job trace (the abstract's "1.46-7.65x more jobs meet their deadlines").

Input: the bundled ``elasticflow-195`` (the ITP jobs of the artifact's
``195job_endtoend_trace.csv``, MIT), run in the ``elasticflow-asplos23`` setting. Metrics:
``deadline_ratio`` (jobs finished by their deadline over jobs with one) and ``jct_mean_s``;
``elasticflow/BASELINE`` rows give ElasticFlow's ratio over each baseline's, beside the
figure's. References: the values the artifact's plotting script draws
(``plot_figure/scripts/plot_fig6.py``: "existing numbers are our test results").
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

POLICIES = ("elasticflow", "edf", "gandiva", "tiresias", "themis", "chronus")
CASES = {"testbed-195": "elasticflow-195"}


@register_experiment(
    "elasticflow-asplos23", "ElasticFlow ASPLOS'23 Fig. 6(b): deadline satisfactory ratio of "
    "ElasticFlow, EDF, Gandiva, Tiresias, Themis and Chronus, 195 jobs on 16 x 8 A100",
    cases=tuple(CASES),
    options={"policies": "comma-separated subset of " + ",".join(POLICIES),
             "limit": "first N jobs of the trace (a quick subset)"},
    pooled=True)
def elasticflow_asplos23(options: ExperimentOptions) -> Iterator[Measured]:
    opts = options.options
    policies = chosen_policies(opts.get("policies"), POLICIES)
    limit = whole_option(opts, "limit", None)
    for case in options.cases:
        ratios: dict[str, float | None] = {}
        for policy in policies:
            summary = run_setting("elasticflow-asplos23", policy, CASES[case], options, case,
                                  limit=limit)
            ratios[policy] = summary.deadline_satisfaction
            yield Measured(case, policy, "deadline_ratio", summary.deadline_satisfaction)
            yield Measured(case, policy, "jct_mean_s", summary.jct_mean)
        ours = ratios.get("elasticflow")
        for policy, ratio in ratios.items():
            if policy != "elasticflow" and ours is not None and ratio:
                yield Measured(case, f"elasticflow/{policy}", "deadline_ratio_gain",
                               ours / ratio)
