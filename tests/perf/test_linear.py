"""LinearScaling: rate = workers / requested, times the slowest worker's relative speed."""

from __future__ import annotations

import pytest

from dlsched.cluster.gpu_types import gpu_type
from dlsched.perf.model import LinearScaling, Placement, get_throughput_model
from dlsched.workload.job import JobSpec


def spec(gpus: int) -> JobSpec:
    return JobSpec("j", 0.0, gpus, 100.0)


@pytest.mark.parametrize(
    ("requested", "workers", "expected"),
    [(1, 1, 1.0), (4, 4, 1.0), (4, 2, 0.5), (4, 8, 2.0), (2, 0, 0.0)],
    ids=["1of1", "4of4", "2of4", "8of4", "no-workers"],
)
def test_rate_is_workers_over_requested(requested, workers, expected):
    model = LinearScaling()
    assert model.rate(spec(requested), Placement.single_node("V100", workers)) == expected


@pytest.mark.parametrize(
    ("gpu_types", "expected"),
    [
        (("V100", "V100"), 1.0),
        (("V100", "K80"), gpu_type("K80").relative_speed),
        (("P100", "K80", "V100", "V100"), 2.0 * gpu_type("K80").relative_speed),
        (("A100", "A100"), gpu_type("A100").relative_speed),
    ],
    ids=["homogeneous", "slowest-k80", "four-mixed", "faster-than-reference"],
)
def test_heterogeneous_runs_at_slowest_worker(gpu_types, expected):
    model = LinearScaling(reference_type="V100")
    placement = Placement(gpu_types, tuple(range(len(gpu_types))))
    assert model.rate(spec(2), placement) == pytest.approx(expected)


def test_without_reference_type_speed_is_ignored():
    placement = Placement(("K80", "V100"), (0, 1))
    assert LinearScaling().rate(spec(2), placement) == 1.0


def test_reference_rate_and_registry():
    assert LinearScaling().reference_rate(spec(8)) == 1.0
    assert isinstance(get_throughput_model("linear"), LinearScaling)


@pytest.mark.parametrize(("requested", "workers"), [(1, 1), (4, 4), (4, 2), (4, 8), (2, 0)])
def test_the_count_shortcut_gives_the_rate(requested: int, workers: int) -> None:
    model = LinearScaling()
    assert model.rate_by_count is not None
    assert model.rate_by_count(spec(requested), workers) == model.rate(
        spec(requested), Placement.single_node("V100", workers))


def test_no_count_shortcut_where_the_rate_reads_the_types() -> None:
    class Halved(LinearScaling):
        def rate(self, spec: JobSpec, placement: Placement) -> float:
            return super().rate(spec, placement) / 2

    assert LinearScaling("V100").rate_by_count is None  # the slowest type counts
    assert Halved().rate_by_count is None  # a subclass's own rate is asked


def test_the_core_rates_a_job_by_its_models_own_rate() -> None:
    from builders import NullExecutor, cluster_of, make_job

    from dlsched.cluster.cluster import Node
    from dlsched.policies.fifo import fifo
    from dlsched.scheduling.scheduler import Scheduler
    from dlsched.sim.clock import SimClock

    class Halved(LinearScaling):
        def rate(self, spec: JobSpec, placement: Placement) -> float:
            return super().rate(spec, placement) / 2

    for model, expected in ((LinearScaling(), 1.0), (Halved(), 0.5)):
        core = Scheduler(cluster_of(Node("v", "V100", 4)), fifo(), model, SimClock(),
                         NullExecutor())
        core.submit(make_job("A").gpus(2).work(100.0).build())
        core.cycle()
        assert core.running["A"].rate == expected
