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
    jobs.csv, config.yaml) goes to ``OUT/runs/CASE/POLICY`` when the experiment has an out.
    With ``options.runs`` the run may come from a pool of processes (prefetch.py)."""
    runs = options.runs
    if runs is not None:
        from dlsched.reproduce.prefetch import run_key

        return runs.answer(run_key(setting, policy, trace, case, overrides),
                           (setting, policy, trace, case, overrides),
                           lambda: _run(setting, policy, trace, options, case, overrides))
    return _run(setting, policy, trace, options, case, overrides)


def _run(setting: str, policy: str, trace: str, options: ExperimentOptions, case: str,
         overrides: dict[str, object]) -> Summary:
    from dlsched.reproduce.prefetch import describe

    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) if options.out is None else options.out / "runs" / case
        config = load_setting(setting).config(policy, trace=trace, out=str(base / policy),
                                              **overrides)
        cluster = resolve_cluster(config.cluster)
        outcome = run_policy(config, policy, load_trace(config, cluster), cluster,
                             Path(config.out))
    summary = outcome.summary
    options.log(describe(case, policy, summary))
    return summary
