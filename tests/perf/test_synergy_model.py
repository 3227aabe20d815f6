"""The Synergy throughput model: relative throughput by CPUs and memory per GPU."""

from __future__ import annotations

import pytest

from dlsched.perf.model import Placement
from dlsched.perf.synergy import SynergyThroughputs, load_profiles
from dlsched.workload.job import HostShare, JobSpec


def test_twelve_profiles_normalized_at_the_proportional_share() -> None:
    profiles = load_profiles()
    assert len(profiles) == 12
    assert all(p.throughput(HostShare(3.0, 62.5)) == pytest.approx(1.0)
               for p in profiles.values())


@pytest.mark.parametrize(("host", "expected"), [
    pytest.param(HostShare(12, 125), 2.94, id="grid-point"),
    pytest.param(HostShare(7.5, 125), 1.875, id="between-cpus"),       # (1.75 + 2.0) / 2
    pytest.param(HostShare(48, 500), 2.94, id="held-beyond-the-grid"),
    pytest.param(HostShare(3, 41.665), 0.55, id="between-memory"),     # (0.1 + 1.0) / 2
])
def test_interpolation(host: HostShare, expected: float) -> None:
    assert load_profiles()["alexnet"].throughput(host) == pytest.approx(expected, abs=1e-3)


@pytest.mark.parametrize(("model", "demand"), [
    ("alexnet", HostShare(12, 125)), ("res18", HostShare(9, 62.5)),
    ("m5", HostShare(6, 187.5)), ("bert", HostShare(1, 20.83)),
])
def test_best_case_demand(model: str, demand: HostShare) -> None:
    assert load_profiles()[model].best_case_demand() == demand


def test_rate_uses_the_host_share_and_names_unknown_models() -> None:
    model = SynergyThroughputs()
    spec = JobSpec("j", 0.0, 2, 100.0, model="AlexNet")
    two = ("V100", "V100"), (0, 0)
    assert model.rate(spec, Placement(*two)) == pytest.approx(1.0)
    assert model.rate(spec, Placement(*two, (), HostShare(12, 125))) == pytest.approx(2.94)
    assert model.rate(spec, Placement(("V100",), (0,))) == pytest.approx(0.5)
    with pytest.raises(KeyError, match="no model 'gpt'"):
        model.rate(JobSpec("x", 0.0, 1, 1.0, model="gpt"), Placement(*two))
