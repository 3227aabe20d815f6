"""The pollux-progress model: the Pollux artifact's fixed-batch speed on any placement."""

from __future__ import annotations

import pytest

from dlsched.perf.model import Placement, get_throughput_model
from dlsched.perf.pollux_progress import replica_cap
from dlsched.workload.job import JobSpec


def spec(app: str, gpus: int, batch: int) -> JobSpec:
    return JobSpec("j", 0.0, gpus, 1.0, model=app, batch_size=batch)


def on(*per_node: int) -> Placement:
    nodes = tuple(n for n, count in enumerate(per_node) for _ in range(count))
    return Placement(("T4",) * len(nodes), nodes)


@pytest.mark.parametrize(("app", "gpus", "batch", "placement", "expected"), [
    pytest.param("bert", 6, 384, on(4, 2), 1.0, id="requested-packed"),
    pytest.param("bert", 6, 384, on(2, 4), 1.0, id="node-order-ignored"),
    # the artifact's own Job alone: 3092 s on 6 packed GPUs, 1324 s on 16
    pytest.param("bert", 6, 384, on(4, 4, 4, 4), 3092 / 1324, id="bert-16"),
    pytest.param("cifar10", 6, 2048, on(4, 4), 910 / 865, id="cifar10-8"),
    pytest.param("bert", 6, 384, on(), 0.0, id="no-gpus"),
])
def test_rates(app: str, gpus: int, batch: int, placement: Placement, expected: float) -> None:
    model = get_throughput_model("pollux-progress")
    assert model.rate(spec(app, gpus, batch), placement) == pytest.approx(expected, rel=1e-3)


def test_spread_placement_is_slower_than_packed() -> None:
    model = get_throughput_model("pollux-progress")
    job = spec("bert", 4, 384)  # measured: 3603 s on 1+1+1+1, 3335 s on one node
    assert 0 < model.rate(job, on(1, 1, 1, 1)) < model.rate(job, on(4))


# The artifact's OptimusPolicy.predict_step_time (simulator/optimus.py), printed by the artifact
@pytest.mark.parametrize(("app", "batch", "workers", "artifact"), [
    ("cifar10", 2048, 1, 1.40364), ("cifar10", 2048, 8, 0.25993), ("cifar10", 2048, 9, 0.25998),
    ("cifar10", 2048, 16, 0.1544), ("bert", 384, 6, 6.09992), ("ncf", 32768, 1, 0.0296),
    ("yolov3", 512, 4, 6.23037), ("imagenet", 3200, 24, 0.74533),
])
def test_step_rate_is_the_artifacts_optimus_prediction(app: str, batch: int, workers: int,
                                                        artifact: float) -> None:
    model = get_throughput_model("pollux-progress")
    full, rest = divmod(workers, 4)
    placement = on(*((4,) * full + ((rest,) if rest else ())))
    assert 1.0 / model.step_rate(spec(app, 1, batch), placement) == pytest.approx(artifact,
                                                                                 abs=1e-5)


def test_step_rate_is_zero_above_the_artifacts_replica_cap() -> None:
    model = get_throughput_model("pollux-progress")
    assert replica_cap("ncf", 32768) == 1 and replica_cap("cifar10", 2048) == 64
    assert model.step_rate(spec("ncf", 1, 32768), on(1)) > 0
    assert model.step_rate(spec("ncf", 1, 32768), on(2)) == 0.0


# The artifact's own cifar10-7 (workload 2 at load 0.5, batch 2048 on 8 GPUs requested), alone
# on 4 GPUs of one node: its log has it at epoch 93 + 0.3039 at t=4080 and 99 + 0.3069 at 4140,
# 36.71 of its 865 reference seconds in the 60 s (0.6119 a second): every epoch 10 s there
# (9.78 s, rounded), where pollux-progress' one ratio for the whole job gives 0.6538 (+6.9%).
def test_epochs_model_times_the_artifacts_60_seconds() -> None:
    from dlsched.workload.readers.pollux_work import epoch_ends

    ends = epoch_ends("cifar10", 2048, 8)
    start = ends[92] + 0.3039380 * (ends[93] - ends[92])
    end = ends[98] + 0.3068671 * (ends[99] - ends[98])
    job = JobSpec("j", 0.0, 8, ends[-1], model="cifar10", batch_size=2048)
    rate = get_throughput_model("pollux-epochs").rate(job, on(4), start / ends[-1])
    assert rate == pytest.approx((end - start) / 60, rel=1e-3)
    assert get_throughput_model("pollux-progress").rate(job, on(4)) == pytest.approx(
        0.6538, rel=1e-3)


@pytest.mark.parametrize(("seconds", "progress", "horizon", "expected"), [
    pytest.param((10.0, 10.0), 0.0, 60.0, 20 / 20, id="finishes-in-window"),
    pytest.param((5.0, 20.0), 0.0, 15.0, (10 + 10 * 10 / 20) / 15, id="crosses-an-epoch"),
    pytest.param((5.0, 20.0), 0.25, 10.0, (5 + 10 * 7.5 / 20) / 10, id="starts-mid-epoch"),
    pytest.param((0.0, 10.0), 0.0, 5.0, (10 + 10 * (5 - 1e-3) / 10) / 5, id="zero-second-epoch"),
])
def test_window_rate(seconds: tuple[float, ...], progress: float, horizon: float,
                     expected: float) -> None:
    """Two epochs of 10 reference seconds each (ends 10, 20) taking ``seconds``."""
    from dlsched.perf.pollux_progress import window_rate

    assert window_rate((10.0, 20.0), seconds, progress, horizon) == pytest.approx(expected)


def test_epochs_model_without_progress_is_pollux_progress() -> None:
    job = spec("bert", 6, 384)
    epochs, progress = (get_throughput_model(n) for n in ("pollux-epochs", "pollux-progress"))
    assert epochs.rate(job, on(4, 4, 4, 4)) == progress.rate(job, on(4, 4, 4, 4))
    assert getattr(epochs, "progress_dependent", False)


@pytest.mark.parametrize(("per_node", "expected"), [
    pytest.param((1, 2, 4, 4), (1, 4, 4, 2), id="4421-looked-up-as-1442"),
    pytest.param((1, 2, 4), (1, 4, 2), id="421-as-142"),
    pytest.param((1, 1, 2, 2), (1, 1, 2, 2), id="2211-as-1122"),
    pytest.param((4, 2), (2, 4), id="two-nodes"),
    pytest.param((3,), (3,), id="one-node"),
])
def test_artifact_shape(per_node: tuple[int, ...], expected: tuple[int, ...]) -> None:
    from dlsched.perf.pollux_progress import artifact_shape

    assert artifact_shape(per_node) == expected


def test_ordered_step_sync_is_the_artifacts_get_throughput() -> None:
    """The artifact's ``get_throughput((4, 4, 2, 1), 373)`` for cifar10 (its most-free list
    for 11 GPUs), printed by the artifact: 0.329235 s a step (its ``(1, 2, 4, 4)``: 0.309761)."""
    from dlsched.perf.pollux_progress import artifact_shape, step_sync

    shape = artifact_shape((4, 4, 2, 1))
    assert step_sync("cifar10", shape, 373, ordered=True)[0] == pytest.approx(0.329235, abs=1e-6)
    assert step_sync("cifar10", shape, 373)[0] == pytest.approx(0.309761, abs=1e-6)


class _PausedModel:
    progress_dependent = True

    def rate_after_pause(self, spec: JobSpec, placement: Placement, progress: float,
                         paused: float) -> float:
        return paused


def test_rerating_tells_the_model_the_restart_pause() -> None:
    """A job re-rated during its 30 s restart gets the rate of the rest of the round."""
    from dlsched.scheduling.rerating import progress_rate
    from dlsched.workload.job import Job

    job = Job(spec("cifar10", 8, 2048))
    job.productive_from = 130.0
    assert progress_rate(_PausedModel(), job, on(4), 100.0) == 30.0
    assert progress_rate(_PausedModel(), job, on(4), 140.0) == 0.0
