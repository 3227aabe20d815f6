"""GPU memory as a quota resource (``gpu_memory``, GB): admission stops at the queue's quota
even with GPUs free, and the audit files count it."""

from __future__ import annotations

from pathlib import Path

import yaml
from builders import make_cluster

from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.tenancy.quota import request_of
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

TENANTS = yaml.safe_dump({"flavors": [{"name": "f"}], "cluster_queues": [
    {"name": "a", "quotas": {"f": {"gpu": 8, "gpu_memory": 20}}}]})


def test_gpu_memory_quota_limits_admission_and_is_counted(tmp_path: Path) -> None:
    from dlsched.report.tenant_output import segment_rows, usage_rows

    config = parse_tenants(TENANTS)
    jobs = [JobSpec(f"j{i}", 0.0, 1, 100.0, queue="a", gpu_memory_gb=8.0) for i in range(3)]
    assert request_of(jobs[0]) == {"gpu": 1.0, "gpu_memory": 8.0}
    profile = with_tenants(build_policy("fifo", {"strict": False}), config)
    sim = Simulator(make_cluster(nodes=1, gpus=4), Trace("t", tuple(jobs)), profile,
                    SimConfig(restart_overhead=0.0))
    result = sim.run()
    starts = {r.job_id: r.first_start for r in result.jobs}
    # 4 GPUs free, but 20 GB of GPU memory: two 8 GB jobs at once, the third after 100 s.
    assert starts == {"j0": 0.0, "j1": 0.0, "j2": 100.0}
    admission = sim.profile.queue_sort
    rows = segment_rows(sim.core, admission)  # type: ignore[arg-type]
    assert [row[-1] for row in rows] == [8.0, 8.0, 8.0]  # the gpu_memory column
    usage = [r for r in usage_rows(rows, config) if r[3] == "gpu_memory"]
    assert max(r[4] for r in usage) == 16.0 and usage[0][5] == 20.0
