"""The goodput-measured model: Pollux's goodput at the artifact's measured step times."""

from __future__ import annotations

import pytest

from dlsched.perf.model import Placement, get_throughput_model
from dlsched.workload.job import JobSpec
from dlsched.workload.readers.pollux_work import progress_seconds


def on(*per_node: int) -> Placement:
    nodes = tuple(n for n, count in enumerate(per_node) for _ in range(count))
    return Placement(("T4",) * len(nodes), nodes)


@pytest.mark.parametrize(("app", "gpus", "batch"), [
    ("cifar10", 6, 2048), ("deepspeech2", 8, 320), ("ncf", 1, 32768), ("bert", 6, 384),
])
def test_reference_run_is_the_artifacts_progress_target_time(app: str, gpus: int,
                                                             batch: int) -> None:
    model = get_throughput_model("goodput-measured")
    seconds = model.reference_run(app, batch, gpus).total_seconds
    assert seconds == pytest.approx(progress_seconds(app, batch, gpus), rel=0.04)


def test_two_nodes_run_at_the_measured_not_the_fitted_speed() -> None:
    # bert on 4+4 T4: the fitted model's step is ~0.7x the measured one, so the fitted goodput
    # model rates it faster than the measured model does
    job = JobSpec("b", 0.0, 6, 1.0, model="bert", batch_size=384)
    measured = get_throughput_model("goodput-measured").rate(job, on(4, 4))
    fitted = get_throughput_model("goodput").rate(job, on(4, 4))
    assert 0 < measured < 0.9 * fitted


def test_ncf_keeps_its_batch() -> None:
    model = get_throughput_model("goodput-measured")
    job = JobSpec("n", 0.0, 1, 1.0, model="ncf", batch_size=32768)
    assert model.sample(job, on(1), 0.5).batch == 32768
