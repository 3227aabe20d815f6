"""A restart on a cluster that can no longer run a stored job (fewer GPUs than it asks, say
``dlsched serve --gpus 1`` after ``--gpus 2``): the core fails the job at its resubmission, as
it refuses a submission that can never run (``Scheduler.submit``). The job ended with no
``failed`` event and nothing on the service's output: ``dlsched jobs ID`` showed it failed, its
events still ending in ``requeued: the service stopped``. Now the failure is an event with the
reason, and ``Service.refused_at_start`` lists it for ``serve`` to print (``docs/runtime.md``,
"State and recovery")."""

from __future__ import annotations

from pathlib import Path

from runtime_helpers import wait_for, worker

from dlsched.runtime.commands import submit
from dlsched.runtime.models import SubmitRequest
from dlsched.runtime.server import local_cluster, start_warnings
from dlsched.runtime.service import Service, ServiceConfig
from dlsched.workload.job import JobStatus


def config(root: Path, gpus: int) -> ServiceConfig:
    return ServiceConfig(local_cluster(gpus, "T4"), root / "data", grace_seconds=2.0,
                         poll_seconds=0.05, retry_backoff=0.0)


def test_a_stored_job_the_smaller_cluster_cannot_run_fails_with_an_event_and_a_warning(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    old = Service(config(tmp_path, gpus=2))
    old.start()
    wide = submit(old, SubmitRequest(command=worker("preemptible", out, 60), gpus=2,
                                     name="wide")).id
    narrow = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1)).id
    wait_for(lambda: (out / f"{wide}-a1-r0.json").exists(), 15, "the 2-GPU job to start")
    old.shutdown()  # SIGTERM: the running job is requeued to resume at the next start

    new = Service(config(tmp_path, gpus=1))
    services.append(new)
    new.start()
    assert new.core.jobs[wide].status is JobStatus.FAILED
    events = [(e.kind, e.message) for e in new.store.events(wide)]
    assert events[-1][0] == "failed", events
    assert "can never run: needs 2 GPUs" in events[-1][1]
    assert [job_id for job_id, _ in new.refused_at_start] == [wide]
    warnings = start_warnings(new)
    assert len(warnings) == 1 and wide in warnings[0] and "needs 2 GPUs" in warnings[0]
    assert narrow not in warnings[0]  # it fits: it waits or runs as before
    assert new.core.jobs[narrow].status is not JobStatus.FAILED


TENANTS = """\
flavors:
  - {name: t4, gpu_types: [T4]}
cluster_queues:
  - {name: team-a, quotas: {t4: {gpu: 1}}}
local_queues:
  - {name: LOCAL, cluster_queue: team-a}
"""


def test_a_restart_whose_tenant_file_lacks_a_stored_jobs_queue_names_the_job(
        tmp_path: Path, out: Path, services: list[Service]) -> None:
    """The job waits (nothing is lost: a tenant file with its queue starts it), with the
    reason "its queue is not a local queue or cluster queue"; the start said nothing."""
    from dlsched.tenancy.loader import load_tenants

    def tenants(local: str) -> ServiceConfig:
        path = tmp_path / f"{local}.yaml"
        path.write_text(TENANTS.replace("LOCAL", local))
        return ServiceConfig(local_cluster(1, "T4"), tmp_path / "data", grace_seconds=2.0,
                             poll_seconds=0.05, retry_backoff=0.0,
                             tenants=load_tenants(path))

    old = Service(tenants("a-dev"))
    old.start()
    holder = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1,
                                       queue="team-a")).id
    waiting = submit(old, SubmitRequest(command=worker("sleep", out, 1), gpus=1,
                                        queue="a-dev")).id
    wait_for(lambda: (out / f"{holder}-a1-r0.json").exists(), 15, "the first job to start")
    old.shutdown()

    new = Service(tenants("a-other"))
    services.append(new)
    new.start()
    warnings = start_warnings(new)
    assert len(warnings) == 1, warnings
    assert f"{waiting} (queue 'a-dev')" in warnings[0] and holder not in warnings[0]
    assert new.core.jobs[waiting].status is JobStatus.PENDING
