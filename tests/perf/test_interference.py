"""The interference model: measured Gavel pairs first, else the per-job-type utilization
model (time-slicing, MPS with compute shares honoured)."""

from __future__ import annotations

import pytest

from dlsched.perf.gavel_table import GavelThroughputs
from dlsched.perf.interference import InterferenceThroughputs, fitted_utilization
from dlsched.perf.model import Placement, get_throughput_model
from dlsched.workload.job import JobSpec, WorkUnit


def spec(job_id: str, model: str | None = None, batch: int | None = None,
         share: float = 1.0) -> JobSpec:
    unit = WorkUnit.ITERATIONS if batch else WorkUnit.REFERENCE_SECONDS
    return JobSpec(job_id, 0.0, 1, 100.0, unit, model=model, batch_size=batch,
                   gpu_share=share)


def shared(partner: JobSpec | None) -> Placement:
    return Placement(("V100",), (0,), (partner,))


@pytest.mark.parametrize(("u_a", "u_b", "expected"), [
    pytest.param(0.3, 0.4, 0.95, id="light-pair-fits"),      # 0.95 * min(1, 1/0.7)
    pytest.param(1.0, 1.0, 0.475, id="heavy-pair-halves"),   # 0.95 * 1/2
    pytest.param(0.6, 0.9, 0.95 / 1.5, id="overcommitted"),
])
def test_time_slicing(u_a: float, u_b: float, expected: float) -> None:
    model = InterferenceThroughputs(utilization={"a": u_a, "b": u_b})
    assert model.rate(spec("x", "a"), shared(spec("y", "b"))) == pytest.approx(expected)
    assert model.rate(spec("x", "a"), shared(None)) == pytest.approx(1.0)


@pytest.mark.parametrize(("share_a", "share_b", "alone", "beside"), [
    # a: u 0.8 capped at 0.5 -> demand 0.5: alone 0.5/0.8; beside b (u 0.4, share 0.5 ->
    # 0.4): 0.9 <= 1, no contention, 0.98 * 0.625.
    pytest.param(0.5, 0.5, 0.625, 0.98 * 0.625, id="capped-shares"),
    # uncapped: demands 0.8 + 0.4 = 1.2 > 1: 0.98 / 1.2.
    pytest.param(1.0, 1.0, 1.0, 0.98 / 1.2, id="uncapped-contend"),
])
def test_mps_honours_compute_shares(share_a: float, share_b: float, alone: float,
                                    beside: float) -> None:
    model = InterferenceThroughputs(sharing="mps", utilization={"a": 0.8, "b": 0.4})
    a, b = spec("x", "a", share=share_a), spec("y", "b", share=share_b)
    assert model.rate(a, shared(None)) == pytest.approx(alone)
    assert model.rate(a, shared(b)) == pytest.approx(beside)


def test_measured_pair_first_then_fitted_utilization() -> None:
    model = InterferenceThroughputs(GavelThroughputs())
    lm, rec = spec("a", "LM", 10), spec("b", "Recommendation", 1024)
    # Gavel V100: LM 10 beside Recommendation 1024 keeps 0.836 of its speed (measured).
    assert model.speed(lm, rec, "V100") == pytest.approx(0.8361, abs=1e-3)
    # No measurement on an A100 (not a Gavel type): the utilization model, u fitted on V100.
    u = fitted_utilization()
    assert model.speed(lm, rec, "A100") == pytest.approx(
        0.95 * min(1.0, 1.0 / (u["lm"] + u["recommendation"])))


def test_registered_names_and_checks() -> None:
    assert get_throughput_model("interference-mps").sharing == "mps"
    assert isinstance(get_throughput_model("gavel-interference").base, GavelThroughputs)
    with pytest.raises(ValueError, match="utilization"):
        InterferenceThroughputs(utilization={"a": 1.5})
    with pytest.raises(ValueError, match="sharing"):
        InterferenceThroughputs(sharing="mig")
