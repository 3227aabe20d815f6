"""Any policy runs inside the tenant model unchanged: with one queue whose quota covers the
cluster, the wrapped policy schedules exactly as it does alone; with quotas, the quota holds."""

from __future__ import annotations

import pytest
from builders import make_cluster, records_of
from harness import config_yaml, cq

from dlsched.errors import ConfigError
from dlsched.experiment import check_queues
from dlsched.policies.fifo import fifo
from dlsched.policies.sjf import srtf
from dlsched.policies.tiresias import tiresias
from dlsched.scheduling.profile import Profile
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

ONE_QUEUE = parse_tenants(config_yaml([cq("default", 1000, cohort=None)]))
JOBS = tuple(JobSpec(f"j{i}", float(t), n, float(w))
             for i, (t, n, w) in enumerate([(0, 4, 500), (10, 8, 300), (20, 2, 50), (30, 4, 900),
                                            (35, 1, 20), (40, 8, 100), (60, 2, 700)]))


def _records(profile: Profile, jobs: tuple[JobSpec, ...]) -> dict:
    sim = Simulator(make_cluster(nodes=2, gpus=8), Trace("t", jobs), profile,
                    SimConfig(restart_overhead=0.0))
    return {k: (r.first_start, r.finish_time, r.preemptions)
            for k, r in records_of(sim).items()}


@pytest.mark.parametrize("build", [lambda: fifo(strict=False), lambda: tiresias(
    thresholds=(1000.0,)), srtf], ids=["fifo-best-effort", "tiresias", "srtf"])
def test_policy_unchanged_inside_one_big_queue(build) -> None:  # type: ignore[no-untyped-def]
    plain = _records(build(), JOBS)
    wrapped = _records(with_tenants(build(), ONE_QUEUE), JOBS)
    assert wrapped == plain
    assert any(p for _, _, p in plain.values()) or build is not srtf


def test_quota_caps_a_queue_in_the_simulator() -> None:
    """a's nominal 4 and no cohort: its two 4-GPU jobs run one after the other though 16 GPUs
    are free: j0 0..100, j1 100..200."""
    config = parse_tenants(config_yaml([cq("a", 4, cohort=None)]))
    jobs = (JobSpec("j0", 0.0, 4, 100.0, queue="a"), JobSpec("j1", 0.0, 4, 100.0, queue="a"))
    assert _records(with_tenants(fifo(strict=False), config), jobs) == {
        "j0": (0.0, 100.0, 0), "j1": (100.0, 200.0, 0)}


def test_with_tenants_wraps_without_changing_the_policy() -> None:
    inner = tiresias()
    profile = with_tenants(inner, ONE_QUEUE)
    assert isinstance(profile.queue_sort, TenantAdmission)
    assert profile.queue_sort.inner is inner.queue_sort
    assert profile.name == "tiresias+tenants" and not profile.strict_fifo
    assert [p.name for p in profile.post_filters] == ["tenants", "tiresias-2dlas"]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_tiresias_inside_tenants_wakes_for_every_demotion(seed: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The tenant layer orders and preempts by Tiresias' queues too, so a demotion may matter
    to it while every waiting job is in Tiresias' last queue: inside it, Tiresias asks a
    wake-up for every demotion (the run equals the one where every demotion wakes a cycle)."""
    from builders import random_preemptive_jobs

    from dlsched.policies.tiresias import DiscretizedLas

    inner = tiresias(thresholds=(600.0,))
    wrapped = with_tenants(inner, ONE_QUEUE)
    assert not inner.queue_sort.own_preemption_only
    assert tiresias().queue_sort.own_preemption_only
    jobs = tuple(random_preemptive_jobs(seed))
    quiet = _records(wrapped, jobs)
    monkeypatch.setattr(DiscretizedLas, "_demotions_matter", lambda self, state: True)
    assert _records(with_tenants(tiresias(thresholds=(600.0,)), ONE_QUEUE), jobs) == quiet


@pytest.mark.parametrize("build", [lambda: fifo(strict=False), tiresias],
                         ids=["fifo-best-effort", "tiresias"])
def test_a_repaired_node_is_room_inside_the_tenant_model(build) -> None:  # type: ignore[no-untyped-def]
    # As tests/sim/test_failures.py's repair case, in one queue: node 1 fails at 10 s for
    # 400 s; the 4-GPU job that arrives at 20 s starts on it when it is repaired (the tenant
    # layer carried its failed search while no job had started or stopped).
    from dlsched.sim.failures import Failure, FailureCategory, FailureModel

    quiet = FailureModel("none", (FailureCategory("gpu", 0.0, 0.0),))
    jobs = (JobSpec("long", 0.0, 4, 1e5), JobSpec("late", 20.0, 4, 500.0))
    sim = Simulator(make_cluster(nodes=2, gpus=4), Trace("t", jobs),
                    with_tenants(build(), ONE_QUEUE),
                    SimConfig(restart_overhead=0.0, failures=quiet))
    assert sim.failures is not None
    sim.failures.inject(Failure(10.0, 1, "gpu", 400.0))
    assert records_of(sim)["late"].first_start == 410.0


@pytest.mark.parametrize(("queues", "message"), [
    (["zz"], "queue 'zz' (1 job), which is no local or cluster queue of it"),
    (["zz", "zz", "yy"], "queue 'zz' (2 jobs), which is no local or cluster queue of it "
                         "(1 more unknown queue)")])
def test_unknown_queue_message(queues: list[str], message: str) -> None:
    """dlsched simulate --tenants: before, 'queue 'zz' (1 jobs)' and '(1 more unknown
    queues)'."""
    tenants = parse_tenants("flavors: [{name: f}]\ncluster_queues:\n"
                            "  - {name: a, quotas: {f: {gpu: 1}}}\n", "t.yaml")
    trace = Trace("t", tuple(JobSpec(f"j{i}", 0.0, 1, 10.0, queue=q)
                             for i, q in enumerate(queues)))
    with pytest.raises(ConfigError) as info:
        check_queues(trace, tenants)
    assert str(info.value) == f"t.yaml: trace t's jobs use {message}"
