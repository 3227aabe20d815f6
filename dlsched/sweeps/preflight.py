"""A sweep's inputs checked before its first run: a typo in the last trace, cluster or policy
of a grid must not end the sweep after the runs before it (as ``dlsched compare`` checks every
policy before its first simulation)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from dlsched.run_config import RunConfig
from dlsched.sweeps.grid import SweepRun

SYNTHETIC = "synthetic"


def check_inputs(runs: Sequence[SweepRun]) -> None:
    """Every cluster resolves, every trace is bundled or a file, and every run's policies,
    policy options, placement, tenant file, throughput model and output format are valid
    (``experiment.check_run``, once per distinct combination)."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.workload.bundled import check_trace_names

    configs = [run.config for run in runs]
    for cluster in dict.fromkeys(c.cluster for c in configs):
        resolve_cluster(cluster)
    for trace in dict.fromkeys(_trace_source(c) for c in configs):
        check_trace_names(trace)
    _check_policies(configs)
    _check_traces_fit(configs)


def _check_traces_fit(configs: Sequence[RunConfig]) -> None:
    """Every trace file read as its runs read it, on each cluster it runs on, once: a job
    asking more GPUs than a cluster has (or a queue its tenant file lacks) stopped the sweep
    at that cluster's first run, after the runs before it. Synthetic traces are drawn per
    seed at the run."""
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.errors import ConfigError, DlschedError
    from dlsched.experiment import load_trace

    read: set[RunConfig] = set()
    for c in configs:
        key = replace(c, policies=(), policy_options=(), seed=0)
        if c.trace == SYNTHETIC or key in read:
            continue
        read.add(key)
        try:
            load_trace(c, resolve_cluster(c.cluster))
        except DlschedError as exc:
            raise ConfigError(f"trace {c.trace} on cluster {c.cluster}: {exc}") from None


def _trace_source(config: RunConfig) -> str:
    return config.synthetic_from if config.trace == SYNTHETIC else config.trace


def _check_policies(configs: Sequence[RunConfig]) -> None:
    from dlsched.experiment import check_run, refuse_services

    checked: set[tuple[object, ...]] = set()
    for c in configs:
        refuse_services(c)
        what = (c.policies, c.policy_options, c.placement, c.tenants, c.throughput,
                c.jobs_format, c.policy_files)
        if what not in checked:
            checked.add(what)
            check_run(c)
