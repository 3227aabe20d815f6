"""``QuotaGate`` (tenancy/allocation.py) on hand-made targets: a fixed allocation policy says
where every job should run, the gate cuts that to the tenants' quotas. Clusters of 4-GPU nodes;
quotas in GPUs; every case checked by hand in its comment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest
from builders import FixedTargets, cluster_of, make_cluster, make_job
from harness import config_yaml, cq

from dlsched.cluster.cluster import Cluster, Node
from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import ClusterSnapshot, whole_free_per_node
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.tenancy.profile import with_tenants
from dlsched.tenancy.reasons import Reason
from dlsched.workload.job import Job, JobStatus


@dataclass(frozen=True)
class J:
    """A job: queue, GPUs asked (``elastic``: 1..gpus), priority, submit time, and the nodes
    of the GPUs it holds when running."""

    job_id: str
    queue: str
    gpus: int
    elastic: bool = False
    prio: int = 0
    at: float = 0.0
    holds: tuple[int, ...] = ()


@dataclass(frozen=True)
class Got:
    sizes: Mapping[str, int]  # job -> GPUs after the cycle (0: none)
    reasons: Mapping[str, str] = field(default_factory=dict)  # core reason text per job
    pending: Mapping[str, tuple[Reason, int]] = field(default_factory=dict)  # reason, position
    resized: frozenset[str] = frozenset()


def _job(spec: J, cluster: Cluster, free: np.ndarray) -> Job:
    builder = make_job(spec.job_id).gpus(spec.gpus).at(spec.at).queue(spec.queue)
    builder = builder.priority(spec.prio).work(1e6)
    job = Job((builder.elastic(1, spec.gpus) if spec.elastic else builder).build())
    if spec.holds:
        gpus = []
        for node in spec.holds:
            first = int(cluster.node_first_gpu[node])
            gpu = next(g for g in range(first, first + int(cluster.node_gpus[node])) if free[g])
            free[gpu] = 0.0
            gpus.append(gpu)
        job.status, job.allocation, job.shares = JobStatus.RUNNING, tuple(gpus), (1.0,) * len(
            gpus)
        job.run_started = job.attained_time = job.progress_time = 0.0
    return job


def gate(tenants: str, jobs: Sequence[J], targets: Mapping[str, Sequence[int]],
         cluster: Cluster | None = None) -> Got:
    cluster = cluster or make_cluster(nodes=3, gpus=4)
    free = np.ones(cluster.num_gpus)
    built = [_job(spec, cluster, free) for spec in jobs]
    snapshot = ClusterSnapshot(cluster, 50.0, free, whole_free_per_node(cluster, free),
                               np.zeros(cluster.num_nodes, dtype=np.int64),
                               tuple(j for j in built if j.allocation),
                               tuple(j for j in built if not j.allocation), LinearScaling())
    inner = Profile("fixed", SubmitOrder(), plugins=(FixedTargets(targets),), acts_on_running=True)
    profile = with_tenants(inner, parse_tenants(tenants))
    result = run_cycle(profile, snapshot)
    sizes = {j.job_id: len(j.allocation) for j in built}
    sizes.update({p.job_id: 0 for p in result.preemptions})
    sizes.update({r.job_id: len(r.gpus) for r in (*result.starts, *result.resizes)})
    reasons = {**result.reasons, **{p.job_id: p.reason for p in result.preemptions}}
    book = profile.queue_sort
    assert isinstance(book, TenantAdmission)
    pending = {j.job_id: (book.pending[j.job_id].reason, book.pending[j.job_id].position)
               for j in built if j.job_id in book.pending}
    return Got(sizes, reasons, pending, frozenset(r.job_id for r in result.resizes))


STRICT = config_yaml([cq("a", 4, cohort=None), cq("b", 4, cohort=None)])
COHORT = config_yaml([cq("a", 4), cq("b", 4)])
LIMIT2 = config_yaml([cq("a", {"nominal": 4, "borrowing_limit": 2}), cq("b", 4)])
NO_QUOTA = "[tenants] " + Reason.NO_QUOTA.value
LIMIT = "[tenants] " + Reason.BORROWING_LIMIT.value
SHORT = "[tenants] " + Reason.NEEDS_PREEMPTION.value


@pytest.mark.parametrize(("tenants", "jobs", "targets", "sizes", "reasons"), [
    # No cohort: a's elastic job asked 8 on an idle cluster; a's nominal is 4: cut to 4.
    (STRICT, [J("a1", "a", 8, elastic=True)], {"a1": (0, 0, 0, 0, 1, 1, 1, 1)},
     {"a1": 4}, {}),
    # The same job rigid: 8 > the 4 a may ever use: it waits, no quota in any flavor.
    (STRICT, [J("a1", "a", 8)], {"a1": (0, 0, 0, 0, 1, 1, 1, 1)}, {"a1": 0},
     {"a1": NO_QUOTA}),
    # A cohort: a borrows b's idle 4 and runs on 8.
    (COHORT, [J("a1", "a", 8)], {"a1": (0, 0, 0, 0, 1, 1, 1, 1)}, {"a1": 8}, {}),
    # Borrowing limit 2: elastic a1 stops at 4 + 2 = 6; rigid, beyond the limit it waits.
    (LIMIT2, [J("a1", "a", 8, elastic=True)], {"a1": (0, 0, 0, 0, 1, 1, 1, 1)},
     {"a1": 6}, {}),
    (LIMIT2, [J("a1", "a", 8)], {"a1": (0, 0, 0, 0, 1, 1, 1, 1)}, {"a1": 0}, {"a1": LIMIT}),
    # The lender comes back: a1 holds 8 (4 borrowed from b); the policy keeps it there and
    # starts b1 on the third node. b1 is within b's nominal and goes first; a1 keeps its
    # nominal 4 (a resize), the borrowed 4 go back.
    (COHORT, [J("a1", "a", 8, elastic=True, holds=(0,) * 4 + (1,) * 4), J("b1", "b", 4)],
     {"a1": (0,) * 4 + (1,) * 4, "b1": (2, 2, 2, 2)}, {"a1": 4, "b1": 4}, {}),
    # The same a1 rigid: 8 no longer fits (b's 4 are b's) and it cannot shrink: preempted.
    (COHORT, [J("a1", "a", 8, holds=(0,) * 4 + (1,) * 4), J("b1", "b", 4)],
     {"a1": (0,) * 4 + (1,) * 4, "b1": (2, 2, 2, 2)}, {"a1": 0, "b1": 4}, {"a1": SHORT}),
    # Priority inside a queue: a-hi (priority 5) is charged before a-lo, submitted earlier.
    (STRICT, [J("a-lo", "a", 4), J("a-hi", "a", 4, prio=5, at=10.0)],
     {"a-lo": (0, 0, 0, 0), "a-hi": (1, 1, 1, 1)}, {"a-lo": 0, "a-hi": 4}, {"a-lo": SHORT}),
    # Running jobs first: a-run holds 4; a waiting job of higher priority cannot take it.
    (STRICT, [J("a-run", "a", 4, holds=(0,) * 4), J("a-new", "a", 4, prio=9)],
     {"a-run": (0,) * 4, "a-new": (1,) * 4}, {"a-run": 4, "a-new": 0}, {"a-new": SHORT}),
], ids=["strict-cuts-elastic", "strict-rigid-waits", "cohort-borrows", "limit-cuts-at-6",
        "limit-rigid-waits", "lender-gets-its-4-back", "lender-back-rigid-preempted",
        "priority-first", "running-first"])
def test_gate_cuts_targets_to_quota(tenants: str, jobs: list[J], targets: dict,
                                    sizes: dict[str, int], reasons: dict[str, str]) -> None:
    got = gate(tenants, jobs, targets)
    assert {k: got.sizes[k] for k in sizes} == sizes
    assert {k: got.reasons[k] for k in reasons} == reasons
    assert not set(got.reasons) - set(reasons)


def test_a_cut_grow_keeps_the_job_in_place() -> None:
    """a1 holds 4 on node 0 and the policy grows it to 8; a's nominal 4 (no cohort) leaves it
    the 4 it holds, on the same GPUs: no resize, no restart."""
    got = gate(STRICT, [J("a1", "a", 8, elastic=True, holds=(0,) * 4)],
               {"a1": (0,) * 4 + (1,) * 4})
    assert got.sizes == {"a1": 4} and got.resized == frozenset()


def test_a_rigid_job_moved_over_quota_keeps_its_gpus() -> None:
    """a1 (rigid 4) holds node 0; the policy moves it to node 1 and starts a2 on node 0.
    Running jobs go first: a1's move fits a's nominal 4, a2 does not and waits."""
    got = gate(STRICT, [J("a1", "a", 4, holds=(0,) * 4), J("a2", "a", 4)],
               {"a1": (1,) * 4, "a2": (0,) * 4})
    assert got.sizes == {"a1": 4, "a2": 0} and got.resized == {"a1"}


def test_pending_reason_and_position() -> None:
    """Three jobs of a (nominal 4), one of an unknown queue: a-hi starts; a1 and a2 wait
    with positions 0 and 1 in a (a-hi, admitted, no longer counts); x waits for its queue."""
    jobs = [J("a1", "a", 4), J("a2", "a", 4, at=1.0), J("a-hi", "a", 4, prio=3, at=2.0),
            J("x", "nowhere", 1)]
    got = gate(STRICT, jobs, {"a1": (0,) * 4, "a2": (1,) * 4, "a-hi": (2,) * 4, "x": (2,)})
    assert got.sizes == {"a1": 0, "a2": 0, "a-hi": 4, "x": 0}
    assert got.pending == {"a1": (Reason.NEEDS_PREEMPTION, 0),
                           "a2": (Reason.NEEDS_PREEMPTION, 1),
                           "x": (Reason.UNKNOWN_QUEUE, 0)}
    assert got.reasons["x"] == f"[tenants] {Reason.UNKNOWN_QUEUE.value} ('nowhere')"


@pytest.mark.parametrize(("jobs", "targets", "sizes"), [
    # The policy gives all 8 GPUs to rigid x (queue a, nominal 4): the gate cuts it, and the
    # idle GPUs go to y (2 GPUs, left out by the policy) and z (queue b, 3 GPUs), in order.
    ([J("x", "a", 8), J("y", "a", 2, at=1.0), J("z", "b", 3, at=2.0)],
     {"x": (0,) * 4 + (1,) * 4}, {"x": 0, "y": 2, "z": 3}),
    # Elastic w (1..6) is cut to a's 4; rigid v (a, 1 GPU) finds a's quota spent: it waits.
    ([J("w", "a", 6, elastic=True), J("v", "a", 1, at=1.0)],
     {"w": (0,) * 4 + (1,) * 2}, {"w": 4, "v": 0}),
    # Nothing is cut: the policy's choice to leave u out stands (no fill).
    ([J("t", "a", 2), J("u", "a", 1, at=1.0)], {"t": (0, 0)}, {"t": 2, "u": 0}),
], ids=["starved-rigid", "quota-spent", "no-cut-no-fill"])
def test_gpus_a_cut_frees_go_to_jobs_that_fit(jobs: list[J], targets: dict,
                                             sizes: dict[str, int]) -> None:
    assert gate(STRICT, jobs, targets).sizes == sizes


def test_a_job_the_policy_left_out_keeps_the_policys_reason() -> None:
    got = gate(STRICT, [J("a1", "a", 4)], {})
    assert got.reasons == {"a1": "[fixed] no GPUs in this round's allocation"}
    assert got.pending == {"a1": (Reason.NOT_ALLOCATED, 0)}


TWO_TYPES = cluster_of(Node("v", "V100", 4), Node("k", "K80", 4))
PER_FLAVOR = config_yaml([cq("a", None, cohort=None)], flavors=[
    {"name": "v100", "gpu_types": ["V100"]}, {"name": "k80", "gpu_types": ["K80"]}]).replace(
    "quotas:\n    f:\n      gpu: null", "quotas:\n    v100: {gpu: 2}\n    k80: {gpu: 4}")


@pytest.mark.parametrize(("targets", "sizes"), [
    # a may use 2 V100s and 4 K80s. a1 elastic on 4 V100s: cut to 2; a2 on 4 K80s: fits.
    ({"a1": (0,) * 4, "a2": (1,) * 4}, {"a1": 2, "a2": 4}),
    # a1 on 2 V100 + 2 K80 is charged 2 to each flavor: fits whole.
    ({"a1": (0, 0, 1, 1)}, {"a1": 4, "a2": 0}),
], ids=["v100-cut", "two-flavors-one-job"])
def test_quota_per_flavor(targets: dict, sizes: dict[str, int]) -> None:
    jobs = [J("a1", "a", 4, elastic=True), J("a2", "a", 4)]
    assert gate(PER_FLAVOR, jobs, targets, TWO_TYPES).sizes == sizes
