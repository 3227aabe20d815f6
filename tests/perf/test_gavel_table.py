"""Gavel table model: values checked by hand against derived_isolated_throughputs.csv."""

from __future__ import annotations

import csv
import dataclasses
import re
from pathlib import Path

import pytest

from dlsched.perf.gavel_table import (
    GavelThroughputs,
    job_type_name,
    job_types,
    parse_job_type,
)
from dlsched.perf.model import Placement, get_throughput_model
from dlsched.workload.job import JobSpec, WorkUnit

GAVEL = GavelThroughputs()


def spec(model: str, batch: int | None, gpus: int = 1) -> JobSpec:
    return JobSpec("j", 0.0, gpus, 1000.0, WorkUnit.ITERATIONS, model=model, batch_size=batch)


def spread(gpu: str, workers: int) -> Placement:
    return Placement((gpu,) * workers, tuple(range(workers)))


@pytest.mark.parametrize(
    ("model", "batch", "gpu", "workers", "expected"),
    [
        ("ResNet-50", 64, "V100", 1, 4.394774823323071),
        ("ResNet-50", 64, "V100", 4, 9.451949566394442),
        ("ResNet-18", 32, "K80", 2, 13.180372871036058),
        ("Transformer", 128, "P100", 8, None),
        ("A3C", None, "P100", 1, 5.681346110543853),
        ("Recommendation", 512, "K80", 1, 32.859303327562166),
        ("ResNet-50", 128, "K80", 1, 0.3472236920519382),
        ("ResNet-50", 128, "K80", 2, 0.0),
        ("ResNet-50", 128, "K80", 8, 0.0),
    ],
    ids=lambda v: str(v),
)
def test_measured_entries(model, batch, gpu, workers, expected):
    rate = GAVEL.rate(spec(model, batch, workers), Placement.single_node(gpu, workers))
    if expected is None:
        assert rate > 0
    else:
        assert rate == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize(
    ("workers", "expected"),
    [
        (3, (7.922054367597505 + 9.451949566394442) / 2),
        (6, (9.451949566394442 + 17.303172756892167) / 2),
        (16, 2 * 17.303172756892167),
        (64, 8 * 17.303172756892167),
    ],
    ids=["3-interpolates-2-4", "6-interpolates-4-8", "16-holds-per-worker", "64-holds-per-worker"],
)
def test_unmeasured_scale_factors(workers, expected):
    rate = GAVEL.rate(spec("ResNet-50", 64, workers), Placement.single_node("V100", workers))
    assert rate == pytest.approx(expected)


@pytest.mark.parametrize("workers", [3, 5, 16], ids=lambda n: f"{n}-workers")
def test_zero_entries_stay_zero_when_unmeasured(workers):
    assert GAVEL.rate(spec("ResNet-50", 128), Placement.single_node("K80", workers)) == 0.0


@pytest.mark.parametrize(
    ("model", "batch"),
    [("ResNet-18", 64), ("ResNet-50", 64), ("ResNet-50", 16), ("Transformer", 128)],
    ids=lambda v: str(v),
)
def test_v100_faster_than_k80(model, batch):
    job = spec(model, batch)
    v100 = GAVEL.rate(job, Placement.single_node("V100", 1))
    assert v100 > GAVEL.rate(job, Placement.single_node("K80", 1))


def test_recommendation_is_faster_on_k80_than_v100_in_this_data():
    job = spec("Recommendation", 512)
    assert GAVEL.rate(job, Placement.single_node("K80", 1)) > GAVEL.rate(
        job, Placement.single_node("V100", 1)
    )


def test_mixed_types_run_at_slowest_rate():
    job = spec("ResNet-18", 32, 2)
    mixed = Placement(("V100", "K80"), (0, 1))
    assert GAVEL.rate(job, mixed) == pytest.approx(13.180372871036058)


@pytest.mark.parametrize(
    ("model", "placement_sensitive", "expected"),
    [("gavel", False, 9.451949566394442), ("gavel-placement", True, 11.136430014818272)],
    ids=["consolidated-default", "unconsolidated-when-asked"],
)
def test_spread_placement(model, placement_sensitive, expected):
    throughput = get_throughput_model(model)
    assert isinstance(throughput, GavelThroughputs)
    assert throughput.placement_sensitive is placement_sensitive
    assert throughput.rate(spec("ResNet-50", 64, 4), spread("V100", 4)) == pytest.approx(expected)


def test_physical_cluster_source_has_its_own_values():
    physical = get_throughput_model("gavel-physical")
    job = spec("ResNet-50", 128)
    assert physical.rate(job, Placement.single_node("K80", 1)) == 0.0
    assert physical.rate(spec("ResNet-50", 64), Placement.single_node("V100", 1)) == (
        pytest.approx(4.525762041224065)
    )


@pytest.mark.parametrize(
    ("model", "batch", "gpus", "expected"),
    [
        ("ResNet-50", 64, 1, 4.394774823323071),  # V100
        ("ResNet-50", 64, 4, 10.36465731519379),  # P100 beats V100 at 4 workers in this data
        ("Recommendation", 512, 1, 48.882390510045944),  # P100
    ],
    ids=["resnet50-1-v100", "resnet50-4-p100", "recommendation-p100"],
)
def test_reference_rate_is_best_type_at_requested_size(model, batch, gpus, expected):
    assert GAVEL.reference_rate(spec(model, batch, gpus)) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("job", "placement", "needle"),
    [
        (spec("ResNet-50", 65), Placement.single_node("V100", 1), "ResNet-50 (batch size 65)"),
        (spec("AlexNet", 64), Placement.single_node("V100", 1), "AlexNet"),
        (spec("ResNet-50", 64), Placement.single_node("A100", 1), "A100"),
    ],
    ids=["unknown-batch", "unknown-model", "unknown-gpu"],
)
def test_unknown_lookups_name_what_is_missing(job, placement, needle):
    with pytest.raises(KeyError, match=re.escape(needle)):
        GAVEL.rate(job, placement)


def test_a_job_type_found_once_is_kept_and_unknown_ones_still_fail():
    # ``job_type`` keeps what it found by (model, batch size): the same key again, without
    # re-reading the table; an unknown pair is not kept and fails each time.
    table = GavelThroughputs()
    first = table.job_type(spec("ResNet-50", 64))
    assert table.job_type(spec("ResNet-50", 64)) is first == ("resnet-50", 64)
    for _ in range(2):
        with pytest.raises(KeyError, match=re.escape("ResNet-50 (batch size 65)")):
            table.job_type(spec("ResNet-50", 65))


def test_empty_placement_has_rate_zero():
    assert GAVEL.rate(spec("ResNet-50", 64), Placement((), ())) == 0.0


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("ResNet-18 (batch size 64)", ("ResNet-18", 64)),
        ("Recommendation (batch size 8192)", ("Recommendation", 8192)),
        ("LM (batch size 5)", ("LM", 5)),
        ("A3C", ("A3C", None)),
        ("CycleGAN", ("CycleGAN", None)),
    ],
    ids=lambda v: str(v),
)
def test_job_type_names_round_trip(name, parsed):
    assert parse_job_type(name) == parsed
    assert job_type_name(*parsed) == name
    assert parsed in job_types()


def test_job_types_lists_the_26_measured_types():
    assert len(job_types()) == 26
    assert len(GAVEL.job_types()) == 26


@pytest.mark.parametrize(
    ("a", "b", "gpu", "expected"),
    [
        (("ResNet-18", 16), ("ResNet-50", 16), "K80", (2.4539953436775868, 0.9827032498016068)),
        (("ResNet-50", 16), ("ResNet-18", 16), "K80", (0.9827032498016068, 2.4539953436775868)),
        (("ResNet-18", 16), ("ResNet-18", 32), "K80", (2.539979567443098, 3.1201925448827033)),
        (("ResNet-50", 128), ("Transformer", 256), "K80", (0.0, 0.0)),
    ],
    ids=["a-b", "b-a-swapped", "same-model", "cannot-share"],
)
def test_colocated_rates(a, b, gpu, expected):
    assert GAVEL.colocated_rate(spec(*a), spec(*b), gpu) == pytest.approx(expected)


def test_colocated_unknown_pair_raises():
    with pytest.raises(KeyError, match="co-located"):
        GAVEL.colocated_rate(spec("A3C", None), spec("ResNet-50", 64), "V100", scale_factor=4)


def test_every_gavel_trace_job_type_is_known(shared_data: Path):
    names = {
        line.split("\t")[0]
        for trace in (shared_data / "traces/gavel/physical_cluster").glob("*.trace")
        for line in trace.read_text().splitlines()
        if line.strip()
    }
    assert names
    for name in names:
        model, batch = parse_job_type(name)
        assert GAVEL.rate(spec(model, batch), Placement.single_node("V100", 1)) > 0


def test_bundled_colocated_file_is_lossless(shared_data: Path):
    source = shared_data / "profiles/gavel/derived_colocated_throughputs.csv"
    with source.open() as rows:
        for row in csv.DictReader(rows):
            job_a, job_b = parse_job_type(row["job_a"]), parse_job_type(row["job_b"])
            gpu = row["worker_type"].removesuffix("_unconsolidated")
            scale = int(row["scale_factor_a"])
            expected = (float(row["steps_per_sec_a"]), float(row["steps_per_sec_b"]))
            assert GAVEL.colocated_rate(spec(*job_a), spec(*job_b), gpu, scale) == expected


def test_shared_placement_uses_the_colocated_rate():
    # ResNet-18 (16) beside ResNet-50 (16) on a K80: 2.454 steps/s (alone it is faster).
    a, b = spec("ResNet-18", 16), spec("ResNet-50", 16)
    alone = GAVEL.rate(a, Placement(("K80",), (0,)))
    shared = GAVEL.rate(a, Placement(("K80",), (0,), (b,)))
    assert shared == pytest.approx(2.4539953436775868)
    assert shared < alone
    assert GAVEL.rate(a, Placement(("K80",), (0,), (None,))) == alone


def test_unmeasured_pair_runs_at_half_its_isolated_rate():
    a = dataclasses.replace(spec("A3C", None), num_gpus=4)
    b = dataclasses.replace(spec("ResNet-50", 64), num_gpus=4)
    alone = GAVEL.rate(a, Placement.single_node("V100", 4))
    shared = GAVEL.rate(a, Placement(("V100",) * 4, (0,) * 4, (b,) * 4))
    assert shared == pytest.approx(0.5 * alone) and alone > 0


def test_scaled_is_the_estimate_on_the_curve_kept_once_computed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dlsched.perf.gavel_table as table

    model = GavelThroughputs()
    job = model.job_type(JobSpec("a", 0.0, 1, 10.0, model="ResNet-18", batch_size=64))
    for kind in ("k80", "V100"):
        for workers in (1, 3, 8):
            assert model.scaled(job, kind, workers) == table.estimate(model.curve(job, kind),
                                                                      workers)
    monkeypatch.setattr(table, "estimate", lambda *_: pytest.fail("not kept"))
    assert model.scaled(job, "k80", 3) > 0


@pytest.mark.parametrize("placement_sensitive", [False, True], ids=["consolidated", "placed"])
@pytest.mark.parametrize(
    ("types", "nodes"),
    [(("V100",), (3,)), (("K80",), (0,)), (("P100",) * 4, (1, 1, 1, 1)),
     (("V100",) * 4, (0, 0, 1, 1)), (("V100", "K80"), (0, 5)), ((), ())],
    ids=["one-v100", "one-k80", "one-node", "two-nodes", "mixed", "none"],
)
def test_rate_alone_is_rate_without_a_placement(types, nodes, placement_sensitive):
    """The core's rate of an unshared job (``Scheduler._launch``): the same value as ``rate``
    of its Placement, asked first (nothing kept) and again (the kept value)."""
    for model, batch in (("ResNet-50", 64), ("Transformer", 128), ("A3C", None)):
        job = spec(model, batch, max(len(types), 1))
        fresh = GavelThroughputs(placement_sensitive=placement_sensitive)
        expected = GavelThroughputs(placement_sensitive=placement_sensitive).rate(
            job, Placement(types, nodes))
        assert fresh.rate_alone(job, types, nodes) == expected
        assert fresh.rate_alone(job, types, nodes) == expected
