"""``dlsched serve --tenants FILE``: the service's policy runs inside the tenant model, and the
job view shows a waiting job's reason and its place in its cluster queue."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")

from dlsched.runtime.commands import (
    RequestError,  # noqa: E402
    submit,  # noqa: E402
)
from dlsched.runtime.models import SubmitRequest  # noqa: E402
from dlsched.runtime.server import local_cluster  # noqa: E402
from dlsched.runtime.service import Service, ServiceConfig  # noqa: E402
from dlsched.runtime.views import job_detail  # noqa: E402
from dlsched.tenancy.loader import load_tenants  # noqa: E402
from dlsched.tenancy.plugins import TenantAdmission  # noqa: E402

# Queue a may use 2 of the 4 GPUs (no cohort: it never borrows); b has the other 2.
TENANTS = """flavors: [{name: any}]
cluster_queues:
  - {name: a, quotas: {any: {gpu: 2}}}
  - {name: b, quotas: {any: {gpu: 2}}}
local_queues: [{name: team-a, cluster_queue: a}]
"""
SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def _wait_until(predicate, seconds: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_serve_with_tenants_holds_a_queue_to_its_quota(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(TENANTS)
    service = Service(ServiceConfig(local_cluster(4, "T4"), tmp_path / "data",
                                    poll_seconds=0.05, grace_seconds=0.5, retry_backoff=0.0,
                                    tenants=load_tenants(tmp_path / "t.yaml")))
    assert isinstance(service.profile.queue_sort, TenantAdmission)
    service.start()
    try:
        first = submit(service, SubmitRequest(command=SLEEP, gpus=2, queue="team-a"))
        second = submit(service, SubmitRequest(command=SLEEP, gpus=2, queue="a"))
        _wait_until(lambda: job_detail(service, first.id).status == "running")
        # 2 GPUs are free, but a's quota is used: the second waits, first in a's queue.
        _wait_until(lambda: job_detail(service, second.id).queue_position is not None)
        view = job_detail(service, second.id)
        assert view.status != "running"
        assert view.queue_position == 1
        assert "insufficient unused quota" in view.pending_reason
        with pytest.raises(RequestError, match="not a local or cluster queue"):
            submit(service, SubmitRequest(command=SLEEP, gpus=1, queue="nobody"))
        assert len(service.core.jobs) == 2  # nothing stored half-way
    finally:
        service.shutdown()


@pytest.mark.parametrize(("fields", "message"), [
    ({"queue": "nobody"}, "queue='nobody': not a local or cluster queue of the tenant file; "
                          "its queues: a, b, team-a"),
    ({}, "queue='default' (no queue given: give one with --queue or \"queue\"): not a local "
         "or cluster queue of the tenant file; its queues: a, b, team-a"),
], ids=["unknown", "none-given"])
def test_a_queue_the_tenants_lack_is_refused_with_theirs(tmp_path: Path, fields: dict,
                                                         message: str) -> None:
    """'queue 'default' is not a local or cluster queue of the tenant file': no word of the
    queues there are, nor, for a job that named none, that it had to."""
    (tmp_path / "t.yaml").write_text(TENANTS)
    service = Service(ServiceConfig(local_cluster(4, "T4"), tmp_path / "data",
                                    tenants=load_tenants(tmp_path / "t.yaml")))
    with pytest.raises(RequestError) as refused:
        submit(service, SubmitRequest(command=SLEEP, gpus=1, **fields))
    assert (refused.value.status, str(refused.value)) == (400, message)
