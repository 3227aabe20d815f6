"""Pollux table model: step times checked by hand against the bundled placements.csv rows."""

from __future__ import annotations

import pytest

from dlsched.perf.model import Placement, get_throughput_model
from dlsched.perf.pollux_table import (
    APPS,
    PolluxThroughputs,
    load_profile,
    packed_placement,
    samples_per_second,
)
from dlsched.workload.job import JobSpec

POLLUX = PolluxThroughputs()


def spec(app: str, batch: int | None, gpus: int) -> JobSpec:
    return JobSpec("j", 0.0, gpus, 3600.0, model=app, batch_size=batch)


def placement(*per_node: int, gpu: str = "T4") -> Placement:
    nodes = tuple(node for node, count in enumerate(per_node) for _ in range(count))
    return Placement((gpu,) * len(nodes), nodes)


@pytest.mark.parametrize(
    ("app", "shape", "batch", "step_time"),
    [
        ("cifar10", (1,), 32, 0.0427886962890625),  # row 1,32
        ("cifar10", (2, 2), 4 * 45, 0.16906001567840576),  # row 22,45
        ("bert", (4,), 4 * 8, 0.740765243768692),  # row 4,8
        ("bert", (1,), 5, (0.45532354712486267 + 0.5693899691104889) / 2),  # between 4 and 6
        # 3 node orders of {3, 2, 1, 1} are measured (1123, 1132, 1213): their mean
        (
            "cifar10",
            (3, 2, 1, 1),
            7 * 64,
            (0.13804235458374023 + 0.1539220094680786 + 0.14279932975769044) / 3,
        ),
        ("cifar10", (1,) * 6, 6 * 32, 0.14090566635131835),  # scalability row 6,6,32
        ("bert", (1,), 2, 0.45532354712486267),  # below the smallest local batch: its step time
        ("bert", (1,), 24, 0.9215156733989716 * 2),  # above the largest: time per sample held
    ],
    ids=[
        "exact",
        "exact-2x2",
        "exact-4",
        "interp-bsz",
        "mean-of-orders",
        "scalability",
        "below-range",
        "above-range",
    ],
)
def test_samples_per_second_from_step_time(app, shape, batch, step_time):
    assert samples_per_second(app, shape, batch) == pytest.approx(batch / step_time)


@pytest.mark.parametrize("app", APPS)
def test_every_small_placement_is_measured(app):
    shapes = load_profile(app).by_shape
    assert len(shapes) == 69  # every multiset of 1-4 nodes with 1-4 GPUs each


@pytest.mark.parametrize("app", APPS)
@pytest.mark.parametrize("gpus", [1, 3, 4, 6, 16], ids=lambda n: f"{n}gpus")
def test_rate_is_one_at_requested_packed_placement(app, gpus):
    job = spec(app, 64 * gpus, gpus)
    assert POLLUX.rate(job, placement(*packed_placement(gpus))) == pytest.approx(1.0)
    assert POLLUX.reference_rate(job) == 1.0


@pytest.mark.parametrize(
    ("app", "batch"),
    [("bert", 96), ("cifar10", 128), ("yolov3", 64), ("ncf", 8192), ("deepspeech2", 320)],
    ids=lambda v: str(v),
)
def test_spreading_over_nodes_is_slower(app, batch):
    assert POLLUX.rate(spec(app, batch, 4), placement(1, 1, 1, 1)) < 1.0


@pytest.mark.parametrize(
    ("shape", "more"),
    [((4,), (4, 4)), ((4, 4), (4, 4, 4, 4)), ((2,), (4,))],
    ids=["4-to-8", "8-to-16", "2-to-4"],
)
def test_more_workers_is_faster_for_cifar10_at_large_batch(shape, more):
    job = spec("cifar10", 4096, 4)
    assert POLLUX.rate(job, placement(*more)) > POLLUX.rate(job, placement(*shape))


def test_more_gpus_per_node_than_measured_scales_the_four_gpu_step():
    # (8,) is not measured: (1 node, 8 replicas) clamps to (1 node, 4 replicas)
    assert samples_per_second("cifar10", (8,), 1024) == pytest.approx(
        2 * samples_per_second("cifar10", (4,), 512)
    )


def test_gpu_type_is_ignored():
    job = spec("imagenet", 800, 4)
    assert POLLUX.rate(job, placement(2, 2, gpu="V100")) == POLLUX.rate(job, placement(2, 2))


@pytest.mark.parametrize(
    ("gpus", "per_node", "expected"),
    [(1, 4, (1,)), (4, 4, (4,)), (6, 4, (4, 2)), (10, 4, (4, 4, 2)), (8, 8, (8,))],
    ids=lambda v: str(v),
)
def test_packed_placement(gpus, per_node, expected):
    assert packed_placement(gpus, per_node) == expected


def test_empty_placement_has_rate_zero():
    assert POLLUX.rate(spec("bert", 96, 4), Placement((), ())) == 0.0
    assert samples_per_second("bert", (), 96) == 0.0


@pytest.mark.parametrize(
    ("job", "error"),
    [(spec("gpt3", 64, 1), KeyError), (spec("bert", None, 1), ValueError)],
    ids=["unknown-app", "no-batch"],
)
def test_bad_specs_raise(job, error):
    with pytest.raises(error):
        POLLUX.rate(job, placement(1))


def test_registered_by_name():
    assert isinstance(get_throughput_model("pollux"), PolluxThroughputs)
