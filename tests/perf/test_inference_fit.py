"""The fitted step-time option of the performance model (``perf/inference/fit.py``): exact
recovery of known coefficients, interpolation between batch sizes by hand, held-out errors,
the wake-up time, the file format's errors, and that the Splitwise curves are untouched."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dlsched.errors import InputError
from dlsched.perf.inference.fit import (
    StepFit,
    StepPoint,
    combined,
    fit_points,
    fit_steps,
    gap_seconds,
    held_out,
    read_steps,
    wake_seconds,
    write_steps,
)
from dlsched.perf.inference.profile import step_profile

PREFILL = (0.002, 0.0003, 0.00008, 1e-7)  # 1, prompts, tokens, sum of squares
LINES = {1: (0.002, 7e-7), 2: (0.0025, 8e-7), 4: (0.0036, 9e-7), 8: (0.005, 9e-7)}


def exact_points() -> list[StepPoint]:
    pts = []
    a, b, c, d = PREFILL
    for n in (1, 2, 4, 8):
        for length in (16, 64, 128, 256):
            t, s = n * length, n * length * length
            pts.append(StepPoint("prefill", n, t, s, a + b * n + c * t + d * s))
    for batch, (a0, c0) in LINES.items():
        for ctx in (16, 64, 256, 448):
            pts.append(StepPoint("decode", batch, batch * ctx, 0, a0 + c0 * batch * ctx))
    return pts


def test_the_fit_recovers_exact_coefficients_and_its_held_out_error_is_nil() -> None:
    fit = fit_steps(exact_points())
    assert fit.prefill_coef == pytest.approx(PREFILL, rel=1e-6)
    assert fit.decode_batches == (1, 2, 4, 8)
    for got, want in zip(fit.decode_lines, LINES.values(), strict=True):
        assert got == pytest.approx(want, rel=1e-6)
    # a pack of mixed lengths: 1 + 3 prompts' worth by hand
    assert fit.prefill_lengths([10, 30, 50]) == pytest.approx(
        0.002 + 3 * 0.0003 + 90 * 0.00008 + (100 + 900 + 2500) * 1e-7)
    errors = held_out(exact_points())
    assert errors["prefill_loo"]["max"] < 1e-6 and errors["decode_loo"]["max"] < 1e-6
    assert errors["prefill_loo"]["points"] == 16 and errors["decode_loo"]["points"] == 16


def test_decode_between_batch_sizes_interpolates_at_the_same_context_per_request() -> None:
    fit = StepFit(PREFILL, (2, 4), ((0.002, 1e-6), (0.004, 2e-6)))
    # batch 3 with 100 tokens each: halfway between 2 x 100 and 4 x 100 tokens
    t2, t4 = 0.002 + 1e-6 * 200, 0.004 + 2e-6 * 400
    assert fit.decode(3, 300.0) == pytest.approx((t2 + t4) / 2)
    # vectorised over KV tokens (the simulator's decode runs), affine in them
    kv = np.array([300.0, 303.0, 306.0])
    assert fit.decode(3, kv) == pytest.approx([fit.decode(3, float(k)) for k in kv])
    # beyond the grid the last segment extends; never below the floor
    assert fit.decode(8, 800.0) > fit.decode(4, 400.0)
    assert fit.scaled(2.0).decode(3, 300.0) == pytest.approx(2 * fit.decode(3, 300.0))


def test_mixed_points_are_held_out_and_wake_is_the_median_extra_time() -> None:
    mixed = StepPoint("decode", 3, 900, 0, 1.1 * fit_steps(exact_points()).decode(3, 900),
                      kind="mixed")
    errors = held_out([*exact_points(), mixed])
    assert errors["decode_mixed"]["median"] == pytest.approx(1 - 1 / 1.1)
    assert errors["decode_mixed"]["points"] == 1 and errors["decode_loo"]["points"] == 16
    wake = [StepPoint("prefill", 1, 64, 4096, t, kind="wake") for t in (0.012, 0.011, 0.02)]
    warm = [StepPoint("prefill", 1, 64, 4096, t, kind="warm") for t in (0.010, 0.009, 0.01)]
    assert wake_seconds(wake + warm) == pytest.approx(0.002)
    assert wake_seconds(warm) == 0.0
    gaps = [StepPoint("gap", 1, 0, 0, t, run=i, kind="gap") for i, t in enumerate((1e-4, 3e-4,
                                                                                  2e-4))]
    assert gap_seconds(gaps) == pytest.approx(2e-4)
    fit = fit_points([*exact_points(), *wake, *warm, *gaps])
    assert (fit.wake, fit.gap) == pytest.approx((0.002, 2e-4))
    assert fit.prefill_coef == pytest.approx(PREFILL, rel=1e-6)
    # repeats combine by their median
    rep = [replace(exact_points()[0], seconds=t) for t in (1.0, 2.0, 9.0)]
    assert [p.seconds for p in combined(rep)] == [2.0]


def test_too_few_points_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="two contexts for >= 2 batch sizes"):
        fit_steps([p for p in exact_points() if p.phase == "prefill" or p.batch == 1])


def test_step_files_round_trip_and_a_bad_cell_names_file_line_column(tmp_path: Path) -> None:
    pts = exact_points()
    write_steps(pts, tmp_path / "s.csv")
    assert read_steps(tmp_path / "s.csv") == pts
    lines = (tmp_path / "s.csv").read_text().splitlines()
    lines[3] = lines[3].replace("prefill", "prefil", 1)
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"bad.csv:4:phase: expected prefill, decode or gap"):
        read_steps(tmp_path / "bad.csv")
    lines = (tmp_path / "s.csv").read_text().splitlines()
    lines[2] = ",".join(v if i != 4 else "-1" for i, v in enumerate(lines[2].split(",")))
    (tmp_path / "neg.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"neg.csv:3:seconds: must be > 0"):
        read_steps(tmp_path / "neg.csv")


def test_a_profile_with_a_fit_uses_it_and_one_without_keeps_its_curves() -> None:
    gpu = step_profile("llama2-70b", "A100", 8)
    assert gpu.fit is None
    assert gpu.prefill_pack_seconds([300, 212], 512) == gpu.prefill(512)
    fit = fit_steps(exact_points(), wake=0.001)
    cpu = replace(gpu, fit=fit)
    assert cpu.prefill_pack_seconds([10, 30, 50], 90) == fit.prefill_lengths([10, 30, 50])
    assert cpu.prefill_seconds(64) == fit.prefill(1, 64, 64 * 64)
    assert cpu.decode_seconds(4, 1000) == fit.decode(4, 1000)
