"""Gavel (Narayanan et al., OSDI'20) §7.2, continuous trace, single-GPU jobs on 36 V100, 36
P100 and 36 K80: FIFO, LAS (Gavel's max-min fairness policy) heterogeneity-agnostic and
-aware, and finish-time fairness, with the ratio of agnostic to aware LAS mean JCT (the
paper's headline: heterogeneity-aware policies cut average JCT).

Input: the bundled ``gavel-continuous-1000`` (written by Gavel's own generator, one job every
120 s on average), its first 100, 300 or 1,000 jobs. References: Gavel's own simulator run on
the same files (``benchmarks/side_by_side.py gavel`` repeats it). dlsched runs each policy in
the ``gavel-osdi20`` setting (Gavel's simulator's rounds: ``mechanism=artifact``).
``gavel-las`` is dlsched's attained-service LP in the same rounds, beside Gavel's LAS.

The paper's own headline (abstract): heterogeneity-aware policies improve average JCT and
makespan "by up to 3.5x" over agnostic ones, a maximum over policies, traces and input rates
(near saturation); the row ``paper-headline`` puts the largest agnostic/aware ratio of the cases
run beside it. At this trace's rate (30 jobs/h, the cluster about half busy) both simulators
give about 1.4x.
"""

from __future__ import annotations

from collections.abc import Iterator

from dlsched.reproduce.registry import ExperimentOptions, chosen_policies, register_experiment
from dlsched.reproduce.rows import Measured
from dlsched.reproduce.simulate import run_setting

POLICIES = ("gavel-fifo", "gavel-maxmin-agnostic", "gavel-maxmin", "gavel-ftf", "gavel-las")
TRACE = "gavel-continuous-1000"
CASES = ("continuous-100", "continuous-300", "continuous-1000")
RATIO = ("agnostic/aware", "gavel-maxmin-agnostic", "gavel-maxmin")


@register_experiment(
    "gavel-osdi20", "Gavel OSDI'20 continuous trace (36 V100/P100/K80, single-GPU jobs): mean "
    "JCT of FIFO, LAS agnostic and aware, FTF, and agnostic/aware, against Gavel's simulator",
    cases=CASES, default_cases=("continuous-100", "continuous-300"),
    options={"policies": "comma-separated subset of " + ",".join(POLICIES)},
    pooled=True)
def gavel_osdi20(options: ExperimentOptions) -> Iterator[Measured]:
    policies = chosen_policies(options.options.get("policies"), POLICIES)
    ratios: list[float] = []
    for case in options.cases:
        limit = int(case.rsplit("-", 1)[1])
        jct: dict[str, float | None] = {}
        for policy in policies:
            summary = run_setting("gavel-osdi20", policy, TRACE, options, case, limit=limit)
            jct[policy] = summary.jct_mean
            yield Measured(case, policy, "jct_mean_s", summary.jct_mean)
            yield Measured(case, policy, "makespan_s", summary.makespan)
        name, agnostic, aware = RATIO
        over, under = jct.get(agnostic), jct.get(aware)
        if over and under:
            ratios.append(over / under)
            yield Measured(case, name, "jct_mean_ratio", over / under)
    if ratios:
        yield Measured("paper-headline", RATIO[0], "jct_mean_ratio_max", max(ratios))
