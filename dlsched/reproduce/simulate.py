"""Run one policy of a named setting on one trace, as ``dlsched simulate`` would."""

from __future__ import annotations

import tempfile
from pathlib import Path

from dlsched.cluster.builtin import resolve_cluster
from dlsched.experiment import load_trace, run_policy
from dlsched.report.metrics import Summary
from dlsched.reproduce.registry import ExperimentOptions
from dlsched.reproduce.settings import load_setting


def run_setting(setting: str, policy: str, trace: str, options: ExperimentOptions,
                case: str, **overrides: object) -> Summary:
    """The summary of ``policy`` in ``setting`` on ``trace``; its run folder (summary.json,
    jobs.csv, config.yaml) goes to ``OUT/runs/CASE/POLICY`` when the experiment has an out."""
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) if options.out is None else options.out / "runs" / case
        config = load_setting(setting).config(policy, trace=trace, out=str(base / policy),
                                              **overrides)
        cluster = resolve_cluster(config.cluster)
        outcome = run_policy(config, policy, load_trace(config, cluster), cluster,
                             Path(config.out))
    summary = outcome.summary
    options.log(f"{case} {policy}: mean JCT {summary.jct_mean or 0:,.0f} s, "
                f"{summary.wall_seconds:.1f} s")
    return summary
