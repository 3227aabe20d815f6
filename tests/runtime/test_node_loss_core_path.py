"""The runtime's node loss goes through the core's failure path (``Scheduler.fail_node``), as
the simulator's does; workers are told the scheduler's checkpoint interval."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import kill_strays, wait_for, worker

from dlsched.cluster.cluster import Cluster, Node
from dlsched.runtime.commands import submit
from dlsched.runtime.models import SubmitRequest
from dlsched.runtime.service import Service, ServiceConfig
from dlsched.workload.job import JobStatus


@pytest.fixture
def two_nodes(tmp_path: Path) -> Any:
    cluster = Cluster("two", (Node("a", "T4", 2), Node("b", "T4", 2)))
    service = Service(ServiceConfig(cluster, tmp_path / "data", poll_seconds=0.05,
                                    grace_seconds=1.0, retry_backoff=0.0,
                                    checkpoint_seconds=7.5))
    down: list[frozenset[int]] = [frozenset()]
    service.executor.down_nodes = lambda: down[0]  # type: ignore[method-assign]
    failed: list[tuple[int, str]] = []
    fail_node = service.core.fail_node

    def spy(node: int, category: str, reason: str, spare: int | None = None) -> list[str]:
        failed.append((node, category))
        return fail_node(node, category, reason, spare)

    service.core.fail_node = spy  # type: ignore[method-assign]
    service.start()
    yield service, down, failed
    service.shutdown()
    kill_strays(tmp_path)


def test_a_lost_node_fails_its_job_through_the_core_and_comes_back(
        two_nodes: Any, out: Path) -> None:
    service, down, failed = two_nodes
    job_id = submit(service, SubmitRequest(command=worker("sleep", out, 60.0), gpus=2)).id
    core = service.core
    wait_for(lambda: (out / f"{job_id}-a1-r0.json").exists(), 30, "the first attempt")
    first = json.loads((out / f"{job_id}-a1-r0.json").read_text())
    assert first["DLSCHED_CHECKPOINT_SECONDS"] == "7.5"  # the scheduler's interval
    with service.locked():
        node = int(service.cluster.gpu_node[core.jobs[job_id].allocation[0]])
    down[0] = frozenset({node})
    wait_for(lambda: failed, 15, "fail_node")
    assert failed == [(node, "node-lost")]
    wait_for(lambda: (out / f"{job_id}-a2-r0.json").exists(), 30, "the second attempt")
    with service.locked():
        job = core.jobs[job_id]
        assert core.down_nodes == frozenset({node})
        assert job.status is JobStatus.RUNNING and job.preemptions == 0  # a failure, not one
        assert {int(service.cluster.gpu_node[g]) for g in job.allocation} == {1 - node}
    down[0] = frozenset()
    wait_for(lambda: not core.down_nodes, 15, "the node back up")
