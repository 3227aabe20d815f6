"""The wrapped policy's turn (``TenantAdmission._policy_turn``) is given only where the run's
own policy says it may find victims (``no_victims``): a hopeless turn costs a victim search
and changes nothing.

Scenario: queue ``a`` (8 GPUs nominal, no cohort) on 16 GPUs; ``long0`` and ``long1`` (4 GPUs,
1e5 s) run from 0 (Tiresias' one threshold, 600 GPU-seconds, demotes them at 150 s). At 1000 s
``short`` (4 GPUs, 100 s) preempts one of them, as alone. At 1050 s a 1-GPU job of queue ``b``
arrives: its cycle tries the evicted long job, which a's quota refuses; it has no victims
(Tiresias: its last queue; SRTF: every running job of ``a`` has a shorter remaining time), so
it gets no turn. Before the fix Tiresias' answer came from the profile's prototype, whose
queues no run fills (it never said no), and SRTF had no answer."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from builders import make_cluster, records_of
from harness import config_yaml, cq

from dlsched.policies.sjf import srtf
from dlsched.policies.tiresias import tiresias
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import Job, JobSpec
from dlsched.workload.trace import Trace

JOBS = (JobSpec("long0", 0.0, 4, 1e5, queue="a"), JobSpec("long1", 0.0, 4, 1e5, queue="a"),
        JobSpec("short", 1000.0, 4, 100.0, queue="a"), JobSpec("b1", 1050.0, 1, 10.0, queue="b"))
POLICIES: dict[str, Callable[[], Profile]] = {
    "tiresias": lambda: tiresias(thresholds=(600.0,)), "srtf": srtf}


def _turns(build: Callable[[], Profile]) -> tuple[dict, list[tuple[str, bool]]]:
    """The records, and for each search of the run's policy plugin: the job and whether it
    had candidates."""
    config = parse_tenants(config_yaml([cq("a", 8, cohort=None), cq("b", 8, cohort=None)]))
    sim = Simulator(make_cluster(nodes=2, gpus=8), Trace("t", JOBS),
                    with_tenants(build(), config), SimConfig(restart_overhead=0.0))
    inner = next(p.inner for p in sim.core.profile.plugins if hasattr(p, "inner"))
    search, searches = inner.post_filter, []

    def counted(state: CycleState, job: Job) -> list[Job]:
        found = list(search(state, job))
        searches.append((job.job_id, bool(found)))
        return found

    inner.post_filter = counted
    return records_of(sim), searches


@pytest.mark.parametrize("policy", list(POLICIES))
def test_no_turn_without_victims(policy: str) -> None:
    records, searches = _turns(POLICIES[policy])
    assert (records["short"].first_start, records["short"].finish_time) == (1000.0, 1100.0)
    assert sum(r.preemptions for r in records.values()) == 1
    assert ("short", True) in searches
    assert all(found for _, found in searches), searches
