"""A started job whose workers launch late (on Ray always: its placement group is reserved and
its actors started 1-4 s after the cycle; locally when it waits for its victims to exit) is
re-timed by ``RuntimeScheduler.launched``: its ``run_started`` moves to the launch, and the
core's journal notes the change. Tiresias keyed its demotion heap and its victim index by the
start the job had when the cycle started it, and read the journal for neither, so such a job
was never demoted and never a victim: `dlsched serve --executor ray --policy tiresias` (the
command of docs/ray.md) never preempted anything (session 30, helper U: a 4-GPU job past a
5 GPU-s threshold kept its GPUs against a 2-GPU newcomer for the whole of its run).

``launched`` now tells the plugins that key jobs by their start (``relaunched``): Tiresias
files the job again under its new start and pushes its next threshold crossing from it.
SRTF, whose running ranks refile every job whose start moved, preempts either way."""

from __future__ import annotations

import pytest
from test_waiting_for_eviction import FixedClock, _Reserving

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling
from dlsched.runtime.core import RuntimeScheduler
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.scheduler import CoreConfig
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import JobSpec

# One cluster queue holding every GPU: Tiresias keeps its running jobs per queue there
# (``victim_scope``), behind the tenant layer's wrapper.
TENANTS = """
flavors: [{name: any}]
cluster_queues:
  - name: team
    quotas: {any: {gpu: 4}}
local_queues: [{name: default, cluster_queue: team}]
"""


def _preempted_after(policy: str, options: dict[str, str], launch_delay: float,
                     tenants: bool = False) -> int:
    """4 GPUs: `long` (4 GPUs) starts at 0, its workers launch at ``launch_delay``; `short`
    (2 GPUs, little work) arrives at 20. How often was `long` preempted?"""
    clock, executor = FixedClock(), _Reserving()
    profile = build_policy(policy, options)
    if tenants:
        profile = with_tenants(profile, parse_tenants(TENANTS))
    core = RuntimeScheduler(Cluster("one", (Node("n0", "T4", 4),)),
                            profile, LinearScaling(), clock, executor,
                            CoreConfig(restart_overhead=0.0))
    executor.holding.add("long")
    core.submit(JobSpec("long", 0.0, 4, 1e6))
    core.cycle()
    clock.time = launch_delay
    executor.holding.clear()
    core.launched("long", launch_delay)
    core.cycle()
    clock.time = 20.0
    core.submit(JobSpec("short", 20.0, 2, 100.0))
    core.cycle()
    return core.jobs["long"].preemptions


@pytest.mark.parametrize(("policy", "options", "delay"), [
    pytest.param("tiresias", {"thresholds": "5"}, 0.0, id="tiresias-launched-at-once"),
    pytest.param("tiresias", {"thresholds": "5"}, 2.0, id="tiresias-launched-late"),
    pytest.param("srtf", {}, 0.0, id="srtf-launched-at-once"),
    pytest.param("srtf", {}, 2.0, id="srtf-launched-late"),
])
def test_a_late_launched_job_can_still_be_preempted(policy: str, options: dict[str, str],
                                                    delay: float) -> None:
    assert _preempted_after(policy, options, delay) == 1


@pytest.mark.parametrize("delay", [0.0, 2.0])
def test_a_late_launched_job_is_a_victim_within_its_cluster_queue(delay: float) -> None:
    """Under tenants Tiresias' index is kept per cluster queue and its hooks are reached
    through the tenant layer's wrapper: the new start must reach that index too."""
    assert _preempted_after("tiresias", {"thresholds": "5"}, delay, tenants=True) == 1
