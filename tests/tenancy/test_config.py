"""The tenant YAML: a full example loads; every inconsistency names file, line and key."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.errors import InputError
from dlsched.tenancy import config as c
from dlsched.tenancy.loader import load_tenants, parse_tenants

GOOD = """\
flavors:
  - {name: a100, gpu_types: [A100]}
  - {name: v100, gpu_types: [V100]}
cohorts:
  - {name: org}
  - {name: research, parent: org}
cluster_queues:
  - name: vision
    cohort: research
    queueing_strategy: StrictFIFO
    weight: 2
    quotas:
      a100: {gpu: {nominal: 8, borrowing_limit: 4, lending_limit: 2}, cpu: 64}
      v100: {gpu: 16}
    preemption:
      within_cluster_queue: lower-or-newer-equal-priority
      reclaim_within_cohort: any
      borrow_within_cohort: {policy: lower-priority, max_priority_threshold: 100}
      min_runtime: 600
    flavor_fungibility: {when_can_borrow: TryNextFlavor, when_can_preempt: Preempt}
  - {name: nlp, cohort: org, quotas: {v100: {gpu: 8}}}
local_queues:
  - {name: team-vision, cluster_queue: vision}
fair_sharing: {enabled: true, strategies: [LessThanInitialShare], usage_half_life: 3600}
requeue: {base_seconds: 60, max_seconds: 1800}
"""


def test_full_example_loads() -> None:
    config = parse_tenants(GOOD, "t.yaml")
    vision = config.cluster_queues["vision"]
    assert vision.flavors == ("a100", "v100")
    assert vision.quotas[("a100", "gpu")] == c.Quota(8, 4, 2)
    assert vision.quotas[("a100", "cpu")] == c.Quota(64)
    assert vision.queueing_strategy is c.QueueingStrategy.STRICT_FIFO
    assert vision.preemption == c.Preemption(
        c.WithinQueue.LOWER_OR_NEWER_EQUAL_PRIORITY, c.Reclaim.ANY,
        c.BorrowWithinCohort(True, 100), 600.0)
    assert vision.fungibility == c.FlavorFungibility(c.WhenCanBorrow.TRY_NEXT_FLAVOR,
                                                     c.WhenCanPreempt.PREEMPT)
    assert config.cohorts["research"].parent == "org"
    assert config.cluster_queue_of("team-vision") is vision
    assert config.fair_sharing == c.FairSharing(True, (c.ShareStrategy.LESS_THAN_INITIAL_SHARE,),
                                                3600.0)
    assert config.requeue.ready_at(100.0, 3) == 100.0 + 240.0
    assert config.requeue.ready_at(100.0, 9) == 100.0 + 1800.0


def test_local_queue_named_as_its_own_cluster_queue() -> None:
    """Kueue's common layout: a LocalQueue named as the ClusterQueue it points at."""
    config = parse_tenants("flavors: [{name: f}]\ncluster_queues:\n"
                           "  - {name: a, quotas: {f: {gpu: 1}}}\n"
                           "local_queues:\n  - {name: a, cluster_queue: a}\n")
    assert config.cluster_queue_of("a") is config.cluster_queues["a"]


def test_implicit_cohort() -> None:
    config = parse_tenants("flavors: [{name: f}]\ncluster_queues:\n"
                           "  - {name: a, cohort: x, quotas: {f: {gpu: 1}}}\n")
    assert config.cohorts["x"] == c.Cohort("x")


BAD = [
    ("borrow-without-cohort", "cluster_queues:\n  - name: a\n    quotas:\n"
     "      f: {gpu: {nominal: 4, borrowing_limit: 2}}\n",
     "t.yaml:5:cluster_queues[0].quotas.f.gpu.borrowing_limit: a borrowing limit needs a cohort"),
    ("lend-above-nominal", "cluster_queues:\n  - name: a\n    cohort: x\n    quotas:\n"
     "      f: {gpu: {nominal: 4, lending_limit: 6}}\n",
     "t.yaml:6:cluster_queues[0].quotas.f.gpu.lending_limit: 6 is above the nominal quota 4"),
    ("unknown-flavor", "cluster_queues:\n  - name: a\n    quotas:\n      g: {gpu: 4}\n",
     "t.yaml:5:cluster_queues[0].quotas.g: unknown flavor 'g'"),
    ("local-queue-nowhere", "cluster_queues: []\nlocal_queues:\n"
     "  - {name: l, cluster_queue: zz}\n",
     "t.yaml:4:local_queues[0].cluster_queue: unknown cluster queue 'zz'"),
    # A job naming 'b' would silently go to cluster queue a, while cluster queue b is idle.
    ("local-queue-shadows-a-cluster-queue",
     "cluster_queues:\n  - {name: a, quotas: {f: {gpu: 2}}}\n"
     "  - {name: b, quotas: {f: {gpu: 6}}}\nlocal_queues:\n  - {name: b, cluster_queue: a}\n",
     "t.yaml:6:local_queues[0].name: 'b' is also a cluster queue: jobs naming it would go to 'a'"),
    # An empty list crashed the first fair-sharing preemption with an IndexError.
    ("no-strategies", "cluster_queues: []\nfair_sharing: {enabled: true, strategies: []}\n",
     "t.yaml:3:fair_sharing.strategies: must be one of [LessThanOrEqualToFinalShare]; "
     "[LessThanInitialShare]; [LessThanOrEqualToFinalShare, LessThanInitialShare]"),
    ("strategy-twice", "cluster_queues: []\nfair_sharing:\n  enabled: true\n"
     "  strategies: [LessThanInitialShare, LessThanInitialShare]\n",
     "t.yaml:5:fair_sharing.strategies: must be one of"),
    ("root-cohort-lends", "cohorts:\n  - {name: r, quotas: {f: {gpu: {nominal: 2, "
     "lending_limit: 1}}}}\n",
     "t.yaml:3:cohorts[0].quotas.f.gpu.lending_limit: a lending limit needs a parent: the "
     "cohort has none"),
    ("cohort-cycle", "cohorts:\n  - {name: x, parent: y}\n  - {name: y, parent: x}\n",
     "t.yaml:3:cohorts[0].parent: cohort cycle through 'x'"),
    ("unknown-parent", "cohorts:\n  - {name: x, parent: nope}\n",
     "t.yaml:3:cohorts[0].parent: unknown cohort 'nope'"),
    ("unknown-key", "cluster_queues:\n  - {name: a, quota: {}}\n",
     "t.yaml:3:cluster_queues[0].quota: unknown key 'quota' (did you mean 'quotas'?)"),
    ("bad-policy", "cluster_queues:\n  - name: a\n    quotas: {f: {gpu: 1}}\n"
     "    preemption: {within_cluster_queue: sometimes}\n",
     "t.yaml:5:cluster_queues[0].preemption.within_cluster_queue: unknown value 'sometimes'"),
    ("negative-quota", "cluster_queues:\n  - {name: a, quotas: {f: {gpu: -1}}}\n",
     "t.yaml:3:cluster_queues[0].quotas.f.gpu: must be >= 0, got -1"),
    ("duplicate-queue", "cluster_queues:\n  - {name: a, quotas: {f: {gpu: 1}}}\n"
     "  - {name: a, quotas: {f: {gpu: 1}}}\n",
     "t.yaml:4:cluster_queues[1].name: 'a' is defined twice"),
    ("unknown-resource", "cluster_queues:\n  - {name: a, quotas: {f: {tpu: 1}}}\n",
     "t.yaml:3:cluster_queues[0].quotas.f.tpu: unknown key 'tpu'"),
]


@pytest.mark.parametrize(("body", "message"), [pytest.param(b, m, id=i) for i, b, m in BAD])
def test_config_errors(body: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        parse_tenants("flavors: [{name: f}]\n" + body, "t.yaml")
    assert str(info.value).startswith(message)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope.yaml: cannot read"):
        load_tenants(tmp_path / "nope.yaml")


def test_philly_example_quotas_are_vc_sizes() -> None:
    """The documented rule: one queue per Philly VC, nominal GPUs = the VC's servers x 8."""
    from dlsched.cluster.builtin import philly

    config = load_tenants(Path(__file__).parents[2] / "examples/tenants/philly-vcs.yaml")
    cluster = philly()
    sizes: dict[str, int] = {}
    for node in cluster.nodes:
        sizes[str(node.pool)] = sizes.get(str(node.pool), 0) + node.num_gpus
    # The trace's 4 VCs without machines in the table borrow only (nominal 0).
    borrow_only = {"23dbec", "51b7ef", "795a4c", "925e2b"}
    assert {name: q.quotas[("p100", "gpu")].nominal
            for name, q in config.cluster_queues.items()} == {**sizes, **dict.fromkeys(
                borrow_only, 0)}
    assert all(q.cohort == "philly" for q in config.cluster_queues.values())


KUEUE_CLUSTER_QUEUE = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-ml}
spec:
  cohort: org
"""


@pytest.mark.parametrize(("body", "message"), [
    (KUEUE_CLUSTER_QUEUE, "<string>:1:apiVersion: a Kubernetes object (kind ClusterQueue): "
                          "Kubernetes manifests are not read as tenants"),
    ("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: a100}\n---\n"
     + KUEUE_CLUSTER_QUEUE, "<string>:1: Kubernetes manifests are not read as tenants"),
    ("flavors: [{name: a100}]\n---\ncluster_queues: []\n",
     "<string>:2: not valid YAML: a second document starts here"),
], ids=["one-object", "several-objects", "two-documents"])
def test_kueue_manifests_and_several_documents_say_so(body: str, message: str) -> None:
    """A ClusterQueue manifest said "unknown key 'apiVersion'", several of them "not valid
    YAML: but found another document"."""
    with pytest.raises(InputError) as err:
        parse_tenants(body)
    assert str(err.value).startswith(message), err.value
