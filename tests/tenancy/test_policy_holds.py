"""A job whose quota is reserved and that the wrapped policy itself holds back (backfill's
reservation: nodes fit it, but it would delay the head) waits for POLICY_HOLDS, not
NO_NODE_FITS; the head that no node fits waits for NO_NODE_FITS (``reasons.not_placed``).
The walk by groups and the job-by-job walk tell the same (``test_group_walk.py``)."""

from __future__ import annotations

import pytest
from harness import config_yaml, cq

from dlsched.cluster.cluster import Cluster, Node
from dlsched.policies.backfill import backfill
from dlsched.policies.fifo import fifo
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.audit import TenantAudit
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.tenancy.reasons import Reason, not_placed
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

# One node of 8 GPUs, quota 16: quota is never short. ``run`` holds 6 GPUs until t=1000;
# ``head`` asks 8 (no node fits it until then: backfill reserves the node for it at 1000);
# ``small`` asks 2, which are free, but runs past 1000: backfill holds it back.
_TRACE = Trace("holds", (JobSpec("run", 0.0, 6, 1000.0, queue="a"),
                         JobSpec("head", 1.0, 8, 100.0, queue="a"),
                         JobSpec("small", 2.0, 2, 5000.0, queue="a")))


def _audit(policy_name: str, by_groups: bool = True) -> TenantAudit:
    policy = backfill() if policy_name == "backfill" else fifo(strict=False)
    profile = with_tenants(policy, parse_tenants(config_yaml([cq("a", 16)])))
    admission = profile.queue_sort
    assert isinstance(admission, TenantAdmission)
    admission.by_groups = admission.by_groups and by_groups
    cluster = Cluster("one", (Node("n0", "V100", 8),))
    sim = Simulator(cluster, _TRACE, profile, SimConfig())
    sim.run()
    ran = sim.core.profile.queue_sort  # the run's own copy of the plugins
    assert isinstance(ran, TenantAdmission)
    return ran.audit


def _first_reasons(audit: TenantAudit) -> dict[str, tuple[Reason, str]]:
    first: dict[str, tuple[Reason, str]] = {}
    for change in audit.pending:
        first.setdefault(change.job_id, (change.reason, change.detail))
    return first


@pytest.mark.parametrize("by_groups", [True, False], ids=["walk-by-groups", "job-by-job"])
def test_backfill_holding_a_job_that_fits_is_the_policy_not_the_nodes(by_groups: bool) -> None:
    first = _first_reasons(_audit("backfill", by_groups))
    assert first["head"][0] is Reason.NO_NODE_FITS
    assert first["small"][0] is Reason.POLICY_HOLDS
    assert first["small"][1].startswith("[easy-backfill] would delay head")


def test_without_the_reservation_the_small_job_starts_and_the_head_waits_for_room() -> None:
    first = _first_reasons(_audit("fifo"))
    assert first == {"head": (Reason.NO_NODE_FITS, first["head"][1])}
    assert first["head"][1].startswith("[placement]")


@pytest.mark.parametrize(("failure", "want"), [
    ("[easy-backfill] would delay j1, which has GPUs reserved at t=10", Reason.POLICY_HOLDS),
    ("[themis] no node passes this filter", Reason.POLICY_HOLDS),
    ("[placement] needs 8 GPUs, 2 free on fitting nodes", Reason.NO_NODE_FITS),
    ("[gang] gang needs 4 workers, got 2", Reason.NO_NODE_FITS),
    ("[gpu-type] no node passes this filter", Reason.NO_NODE_FITS),
    ("no change since it last failed", Reason.NO_NODE_FITS),
    ("", Reason.NO_NODE_FITS),
], ids=["backfill", "themis-filter", "placement", "gang", "core-filter", "memo", "empty"])
def test_the_failing_plugin_tells_which(failure: str, want: Reason) -> None:
    assert not_placed(failure, frozenset({"easy-backfill", "themis"})) is want


def test_moving_between_the_two_is_not_a_new_row() -> None:
    """The walk by groups skips steady jobs without telling which of the two a try would
    meet: the audit logs the kind's changes only, so both walks log the same rows."""
    audit = TenantAudit()
    audit.waits(0.0, "j", "a", (("f", Reason.POLICY_HOLDS),), "[easy-backfill] x")
    audit.waits(1.0, "j", "a", (("f", Reason.NO_NODE_FITS),), "[placement] y")
    audit.waits(2.0, "j", "a", (("f", Reason.NEEDS_PREEMPTION),))
    audit.waits(3.0, "j", "a", (("f", Reason.NO_NODE_FITS),), "[placement] y")
    assert [(c.time, c.reason) for c in audit.pending] == [
        (0.0, Reason.POLICY_HOLDS), (2.0, Reason.NEEDS_PREEMPTION), (3.0, Reason.NO_NODE_FITS)]
