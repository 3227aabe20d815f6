"""``pending_reasons.csv`` writes a job's reason per flavor; the row's ``detail`` explains that
row's reason. A job whose a100 quota was used up and whose v100 quota was reserved but found
no V100 free had its a100 row read NEEDS_PREEMPTION with the v100 placement failure as detail
("[placement] needs 2 GPUs, 0 free on fitting nodes"), as if the a100 nodes were full."""

from __future__ import annotations

import csv
from pathlib import Path

from builders import cluster_of

from dlsched.cluster.cluster import Node
from dlsched.policies.fifo import fifo
from dlsched.report.output import run_identity
from dlsched.report.tenant_output import write_audit
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

TENANTS = """
flavors: [{name: a100, gpu_types: [A100]}, {name: v100, gpu_types: [V100]}]
cluster_queues:
  - {name: team, quotas: {a100: {gpu: 2}, v100: {gpu: 8}}}
"""


def test_each_flavor_row_carries_only_its_own_detail(tmp_path: Path) -> None:
    # big (4) fits only v100's quota and fills the V100 node; small takes a100's quota of 2;
    # wait: a100 quota used (NEEDS_PREEMPTION), v100 quota free but no V100 free
    cluster = cluster_of(Node("a", "A100", 4), Node("v", "V100", 4))
    specs = (JobSpec("big", 0.0, 4, 1000.0, queue="team"),
             JobSpec("small", 10.0, 2, 100.0, queue="team"),
             JobSpec("wait", 20.0, 2, 100.0, queue="team"))
    profile = with_tenants(fifo(strict=False), parse_tenants(TENANTS))
    sim = Simulator(cluster, Trace("flavors", specs), profile, SimConfig())
    result = sim.run()
    write_audit(sim.core, sim.profile.queue_sort, tmp_path, run_identity(result.info))
    with (tmp_path / "pending_reasons.csv").open() as stream:
        rows = [(r["flavor"], r["reason"], r["detail"]) for r in csv.DictReader(stream)
                if r["job_id"] == "wait"]
    assert rows[:2] == [("a100", "NEEDS_PREEMPTION", ""),
                        ("v100", "NO_NODE_FITS",
                         "[placement] needs 2 GPUs, none free on fitting nodes")]
