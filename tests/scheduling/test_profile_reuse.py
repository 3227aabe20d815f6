"""A profile is a reusable specification (issue 11 item 5): every registered policy, run twice
on one profile object, gives the second run exactly the first run's schedule; the run's
plugins are copies, so the profile's own plugins are never touched."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from dlsched.cluster.cluster import Cluster, Node
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import build_policy, policies
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.trace import Trace


@dataclass(frozen=True)
class Workload:
    """The first ``jobs`` of a bundled trace on ``nodes`` 4-GPU nodes of each of ``types``,
    simulated for ``hours``: enough contention that every policy queues and preempts."""

    trace: str
    jobs: int
    types: tuple[str, ...]
    nodes: int
    hours: float
    models: tuple[str, ...] = ()  # the jobs' models in turn, under Synergy's profiles

    def build(self) -> tuple[Trace, Cluster]:
        full = resolve_trace(self.trace)
        jobs = full.jobs[:self.jobs]
        host = {"cpus": 12, "memory_gb": 250} if self.models else {}
        if self.models:
            jobs = tuple(replace(s, model=self.models[i % len(self.models)])
                         for i, s in enumerate(jobs))
            full = replace(full, throughput="synergy")
        return replace(full, jobs=jobs), Cluster("reuse", tuple(
            Node(f"{kind.lower()}-{i}", kind, 4, **host) for kind in self.types
            for i in range(self.nodes)))


POLLUX = Workload("pollux-1", 30, ("T4",), 4, 2.0)
# Gavel's policies need Gavel's measured table (the packed one its co-location measurements).
GAVEL = Workload("gavel-max-min-fairness", 14, ("K80", "P100", "V100"), 2, 4.0)
# Synergy's policies need its CPU/memory profiles and nodes with CPUs and memory.
SYNERGY = Workload("pollux-1", 30, ("T4",), 4, 2.0, ("alexnet", "bert", "res18", "gnmt"))


def _schedule(profile: Profile, workload: Workload) -> list[tuple]:
    trace, cluster = workload.build()
    config = SimConfig(restart_overhead=10.0, max_time=workload.hours * 3600)
    result = Simulator(cluster, trace, profile, config).run()
    return [(r.job_id, r.status, r.first_start, r.finish_time, r.preemptions)
            for r in result.jobs]


@pytest.mark.parametrize("policy", sorted(policies()))
def test_a_profile_run_twice_gives_the_same_schedule(policy: str) -> None:
    workload = (GAVEL if policy.startswith("gavel-") else
                SYNERGY if policy.startswith("synergy-") else POLLUX)
    profile = build_policy(policy)
    first = _schedule(profile, workload)
    assert first == _schedule(profile, workload)
    assert any(start is not None for _, _, start, *_ in first)


def test_a_run_works_on_copies_of_the_plugins() -> None:
    profile = build_policy("themis")
    run = profile.instantiate()
    assert run.queue_sort is not profile.queue_sort
    assert run.plugins[0] is run.queue_sort  # one plugin at two points stays one object
    assert run.instance_of(profile.queue_sort) is run.queue_sort
    assert profile.instance_of(profile.queue_sort) is profile.queue_sort
