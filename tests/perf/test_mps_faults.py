"""MPS fault propagation (``InterferenceThroughputs.fault_domain``, ``Scheduler.client_fault``):
under MPS a crash of one client takes down the jobs sharing its GPU; with the option off, or
under time-slicing, only the crashed job stops. Hand-checked on two V100s: A and B share GPU
0 at half a GPU each (MPS rate 0.98 x 0.5 = 0.49), C holds GPU 1; A crashes at 50 s."""

from __future__ import annotations

import pytest
from builders import make_cluster

from dlsched.perf.interference import InterferenceThroughputs, fault_spreads
from dlsched.scheduling.registry import build_policy
from dlsched.sim.failures import ClientFault
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

JOBS = (JobSpec("A", 0.0, 1, 98.0, gpu_share=0.5), JobSpec("B", 0.0, 1, 98.0, gpu_share=0.5),
        JobSpec("C", 0.0, 1, 98.0))


def runs(model: InterferenceThroughputs) -> tuple[dict[str, int], dict[str, float]]:
    sim = Simulator(make_cluster(nodes=1, gpus=2), Trace("t", JOBS), build_policy("fifo"),
                    SimConfig(restart_overhead=0.0, client_faults=(ClientFault(50.0, "A"),)),
                    throughput=model)
    result = sim.run()
    counts: dict[str, int] = {}
    for segment in sim.core.segments.all():
        counts[segment.job_id] = counts.get(segment.job_id, 0) + 1
    return counts, {r.job_id: r.finish_time for r in result.jobs}  # type: ignore[misc]


@pytest.mark.parametrize(("model", "restarted"), [
    pytest.param(InterferenceThroughputs(sharing="mps"), {"A": 2, "B": 2, "C": 1},
                 id="mps-gpu-fault-domain"),
    pytest.param(InterferenceThroughputs(sharing="mps", fault_domain="client"),
                 {"A": 2, "B": 1, "C": 1}, id="mps-client-fault-domain"),
    pytest.param(InterferenceThroughputs(sharing="time-slice"), {"A": 2, "B": 1, "C": 1},
                 id="time-slicing"),
])
def test_an_mps_client_fault_takes_down_its_gpus_other_clients(
        model: InterferenceThroughputs, restarted: dict[str, int]) -> None:
    counts, finish = runs(model)
    assert counts == restarted
    # No checkpoint model: the work is kept, both restart at once at the same rates; C (alone)
    # runs at 1.0 and is never touched.
    assert finish["C"] == pytest.approx(98.0)
    if model.sharing == "mps":
        assert finish["A"] == finish["B"] == pytest.approx(98.0 / 0.49)


def test_the_option_is_checked() -> None:
    assert fault_spreads(InterferenceThroughputs(sharing="mps"))
    assert not fault_spreads(InterferenceThroughputs(sharing="mps", fault_domain="client"))
    with pytest.raises(ValueError, match="fault_domain must be one of"):
        InterferenceThroughputs(sharing="mps", fault_domain="node")
