"""Host CPUs and memory a policy gives a job (``Assignment.host``, Synergy): the job holds
them (``Job.host``), the throughput model sees them (``Placement.host``), and the core books
them in place of the spec's demand, refusing to overbook a node."""

from __future__ import annotations

import pytest

from dlsched.cluster.cluster import Cluster, Node
from dlsched.scheduling.allocation import Assignment
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.resources import Overbooked
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import HostShare, Job, JobSpec
from dlsched.workload.trace import Trace

NODE = Cluster("one", (Node("n0", "V100", 2, cpus=6, memory_gb=125),))


class GiveCpus:
    """Every active job on node 0 with ``cpus`` CPUs and 10 GB per worker."""

    name = "give-cpus"

    def __init__(self, cpus: float) -> None:
        self.cpus = cpus

    def sort_key(self, state: CycleState | None, job: Job) -> tuple[float, str]:
        return (job.spec.submit_time, job.job_id)

    def allocate(self, state: CycleState) -> dict[str, Assignment]:
        jobs = (*state.snapshot.running, *state.snapshot.waiting)
        return {j.job_id: Assignment((0,), host=HostShare(self.cpus, 10.0)) for j in jobs}


def run(cpus: float) -> Simulator:
    plugin = GiveCpus(cpus)
    jobs = (JobSpec("A", 0.0, 1, 100.0, model="alexnet"),
            JobSpec("B", 0.0, 1, 100.0, model="alexnet"))
    sim = Simulator(NODE, Trace("t", jobs, throughput="synergy"),
                    Profile("p", plugin, plugins=(plugin,)), SimConfig(restart_overhead=0.0))
    return sim


def test_the_job_holds_and_runs_at_its_host_share() -> None:
    sim = run(3.0)
    sim.run()
    # alexnet at 3 CPUs, 10 GB: below the profile's 20.83 GB, held at the grid's edge (0.1x).
    assert sim.core.jobs["A"].host == HostShare(3.0, 10.0)
    assert sim.core.jobs["A"].finish_time == pytest.approx(1000.0)


def test_the_core_refuses_to_overbook_host_cpus() -> None:
    sim = run(4.0)  # two workers of 4 CPUs on a 6-CPU node
    with pytest.raises(Overbooked, match="CPUs"):
        sim.run()
