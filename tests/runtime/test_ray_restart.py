"""A restart of a service with the Ray executor finds its attempts again (``ray_adopt.py``): the
executor's placement groups and actors are detached and named after the service, so a crash
(``kill -9``) leaves them running; the restarted service adopts a running attempt as the local
executor adopts its subprocesses, and stops and releases one that was being stopped. Before,
a Ray attempt was never adopted: the restart always requeued the job to run again.

One single-node Ray cluster (4 fake T4 GPUs) for the module; skipped where Ray cannot start.
The test process stays the Ray driver throughout, so a crash here is the service's loop and
store stopping dead (``runtime_helpers.crash``): what Ray does when a driver dies (it reaps
the driver's non-detached actors) is ``test_ray_executor``'s kill -9 test's business.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ray = pytest.importorskip("ray")

from runtime_helpers import crash, wait_for, worker  # noqa: E402
from test_stop_intent import _die_before_the_signal, _Killed  # noqa: E402

from dlsched.runtime.commands import cancel, submit  # noqa: E402
from dlsched.runtime.executors.processes import alive  # noqa: E402
from dlsched.runtime.executors.ray_cluster import RayCluster, connect  # noqa: E402
from dlsched.runtime.executors.ray_lease import lease_name  # noqa: E402
from dlsched.runtime.executors.ray_local import local_ray_cluster  # noqa: E402
from dlsched.runtime.models import SubmitRequest  # noqa: E402
from dlsched.runtime.service import Service, ServiceConfig  # noqa: E402
from dlsched.workload.job import JobStatus  # noqa: E402


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[RayCluster]:
    if ray.is_initialized():
        pytest.skip("this process is already a Ray driver")
    try:
        started = local_ray_cluster(("T4",), 4)
        started.__enter__()
    except Exception as exc:  # no Ray here (no shared memory, ports, ...): skip, not fail
        pytest.skip(f"Ray cannot start here: {exc}")
    try:
        yield connect(None)
    finally:
        started.__exit__(None, None, None)


def _service(ray_cluster: RayCluster, root: Path, grace: float,
             orphan_timeout: float = 600.0) -> Service:
    service = Service(ServiceConfig(ray_cluster.cluster, root / "data", grace_seconds=grace,
                                    poll_seconds=0.05, retry_backoff=0.0,
                                    ray_cluster=ray_cluster, orphan_timeout=orphan_timeout))
    service.start()
    return service


def _pid(out: Path, job_id: str) -> int:
    path = out / f"{job_id}-a1-r0.json"
    wait_for(path.exists, 60, f"{job_id}'s worker to start")
    return int(json.loads(path.read_text())["pid"])


def _named(owner: str) -> list[str]:
    return [name for name in ray.util.list_named_actors() if name.startswith(f"{owner}-")]


def test_a_running_ray_attempt_is_adopted_after_a_crash(
        ray_cluster: RayCluster, tmp_path: Path, out: Path, services: list[Service]) -> None:
    old = _service(ray_cluster, tmp_path, grace=2.0)
    job = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=2)).id
    pid = _pid(out, job)
    wait_for(lambda: old.store.attempts(job) and old.store.attempts(job)[0].pids, 10,
             "the launch to be recorded")
    crash(old)
    assert alive(pid)

    new = _service(ray_cluster, tmp_path, grace=2.0)
    services.append(new)
    assert "adopted" in [e.kind for e in new.store.events(job)]
    assert [a.number for a in new.store.attempts(job)] == [1]
    assert new.core.jobs[job].status is JobStatus.RUNNING and alive(pid)
    assert len(_named(new.executor.owner)) == 2  # type: ignore[attr-defined]
    cancel(new, job)  # the adopted actors obey the new service
    wait_for(lambda: new.store.attempts(job)[0].outcome == "stopped", 30, "the stop")
    wait_for(lambda: not alive(pid), 10, "the worker to exit")
    wait_for(lambda: not _named(new.executor.owner), 10, "the actors to go")  # type: ignore[attr-defined]


def test_a_ray_attempt_stopping_at_the_crash_is_released_not_adopted(
        ray_cluster: RayCluster, tmp_path: Path, out: Path, services: list[Service]) -> None:
    old = _service(ray_cluster, tmp_path, grace=2.0)
    job = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=4)).id
    pid = _pid(out, job)
    _die_before_the_signal(old)
    with pytest.raises(_Killed):
        cancel(old, job)
    crash(old)
    assert alive(pid)

    new = _service(ray_cluster, tmp_path, grace=2.0)
    services.append(new)
    assert not alive(pid)  # released before anything else starts
    assert "adopted" not in [e.kind for e in new.store.events(job)]
    assert new.store.attempts(job)[0].outcome == "stopped"
    assert not _named(new.executor.owner)  # type: ignore[attr-defined]
    # All 4 GPUs are free in Ray again: a 4-GPU job reserves them.
    other = submit(new, SubmitRequest(command=worker("sleep", out, 0), gpus=4)).id
    wait_for(lambda: new.core.jobs[other].status is JobStatus.FINISHED, 60, "the next job")


def test_a_reservation_still_waiting_at_the_crash_is_released(
        ray_cluster: RayCluster, tmp_path: Path, out: Path, services: list[Service]) -> None:
    """Another Ray user holds 3 GPUs, so a 2-GPU job's group waits (no attempt recorded yet);
    the service dies. The restart removes that group and its actors (they would have held the
    GPUs unseen once reserved) and the job starts anew when the GPUs come free."""
    from ray.util.placement_group import placement_group, remove_placement_group

    foreign = placement_group([{"GPU": 3}])
    assert foreign.wait(30)
    old = _service(ray_cluster, tmp_path, grace=1.0)
    job = submit(old, SubmitRequest(command=worker("sleep", out, 0), gpus=2)).id
    owner = old.executor.owner  # type: ignore[attr-defined]
    waiting = wait_for(lambda: len(_named(owner)) == 2 and _named(owner), 30,
                       "its actors to be named")
    crash(old)

    new = _service(ray_cluster, tmp_path, grace=1.0)
    services.append(new)
    assert not set(waiting) & set(_named(owner))  # released; its new reservation waits
    remove_placement_group(foreign)
    wait_for(lambda: new.core.jobs[job].status is JobStatus.FINISHED, 60, "the job to run")
    assert [a.number for a in new.store.attempts(job)] == [1]  # the old one never launched
    wait_for(lambda: not _named(owner), 10, "every actor to go")


def test_a_ray_attempt_that_completed_while_no_service_ran_finishes(
        ray_cluster: RayCluster, tmp_path: Path, out: Path, services: list[Service]) -> None:
    """Its actors saw every worker exit 0 unasked: the job is finished at the restart, never
    run again (a Ray job was always requeued to run once more)."""
    old = _service(ray_cluster, tmp_path, grace=1.0)
    job = submit(old, SubmitRequest(command=worker("sleep", out, 1.0), gpus=1)).id
    pid = _pid(out, job)
    crash(old)
    wait_for(lambda: not alive(pid), 30, "the worker to complete")

    new = _service(ray_cluster, tmp_path, grace=1.0)
    services.append(new)
    assert new.store.job(job).status == "finished"  # type: ignore[union-attr]
    assert [(a.number, a.outcome) for a in new.store.attempts(job)] == [(1, "succeeded")]
    assert not _named(new.executor.owner)  # type: ignore[attr-defined]


def _groups(owner: str) -> list[str]:
    """The owner's placement groups that Ray has not removed."""
    return [info["name"] for info in ray.util.placement_group_table().values()
            if (info.get("name") or "").startswith(f"{owner}-")
            and info.get("state") != "REMOVED"]


# A service in its own process (its own Ray driver), so that kill -9 is a real one.
SERVICE = """
import json, sys, time
from pathlib import Path
from dlsched.runtime.commands import submit
from dlsched.runtime.executors.ray_cluster import connect
from dlsched.runtime.models import SubmitRequest
from dlsched.runtime.service import Service, ServiceConfig
ray_cluster = connect(sys.argv[1])
service = Service(ServiceConfig(ray_cluster.cluster, Path(sys.argv[2]), grace_seconds=1.0,
                                poll_seconds=0.05, ray_cluster=ray_cluster, orphan_timeout=3.0))
service.start()
job = submit(service, SubmitRequest(command=json.loads(sys.argv[3]), gpus=2)).id
print(service.executor.owner, job, flush=True)
time.sleep(600)
"""


def test_a_service_killed_and_never_restarted_loses_its_ray_workers_after_the_timeout(
        ray_cluster: RayCluster, tmp_path: Path, out: Path, services: list[Service]) -> None:
    """Detached actors outlive the service's kill -9; before the orphan timeout they kept
    running and their group held the GPUs in Ray for good. Now its lease releases them all,
    and a later restart requeues the job (nothing is left to adopt)."""
    address = ray.get_runtime_context().gcs_address
    service = subprocess.Popen(
        [sys.executable, "-c", SERVICE, address, str(tmp_path / "data"),
         json.dumps(worker("sleep", out, 60))], stdout=subprocess.PIPE, text=True)
    try:
        assert service.stdout is not None
        owner, job = service.stdout.readline().split()
        pid = _pid(out, job)
        assert len(_named(owner)) == 2 and len(_groups(owner)) == 1
    finally:
        service.send_signal(signal.SIGKILL)
        service.wait()
    time.sleep(1.5)  # the last renewal came at most 1 s before the kill: still in time
    assert alive(pid) and len(_named(owner)) == 2

    wait_for(lambda: not alive(pid), 30, "the orphaned worker to be stopped")
    wait_for(lambda: not _named(owner) and not _groups(owner), 15, "the actors and group to go")
    wait_for(lambda: lease_name(owner) not in ray.util.list_named_actors(), 15,
             "the lease to end itself")
    wait_for(lambda: ray.available_resources().get("GPU") == 4, 15, "the GPUs to be free")

    new = _service(ray_cluster, tmp_path, grace=1.0)
    services.append(new)
    assert [e.kind for e in new.store.events(job)][-1] == "requeued"
    assert [(a.number, a.outcome) for a in new.store.attempts(job)][0] == (1, "abandoned")
    wait_for((out / f"{job}-a2-r0.json").exists, 60, "its second attempt to start")


def test_a_restart_within_the_orphan_timeout_still_adopts(
        ray_cluster: RayCluster, tmp_path: Path, out: Path, services: list[Service]) -> None:
    """The restarted service renews the same lease: past the old service's timeout, the
    adopted attempt still runs."""
    old = _service(ray_cluster, tmp_path, grace=1.0, orphan_timeout=4.0)
    job = submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1)).id
    pid = _pid(out, job)
    wait_for(lambda: old.store.attempts(job) and old.store.attempts(job)[0].pids, 10,
             "the launch to be recorded")
    crash(old)

    new = _service(ray_cluster, tmp_path, grace=1.0, orphan_timeout=4.0)
    services.append(new)
    assert "adopted" in [e.kind for e in new.store.events(job)]
    time.sleep(6.0)  # past the timeout counted from the crash
    assert alive(pid) and new.core.jobs[job].status is JobStatus.RUNNING
    owner = new.executor.owner  # type: ignore[attr-defined]
    assert len(_named(owner)) == 1
    services.remove(new)
    new.shutdown()  # a clean shutdown releases everything, the lease included
    assert not alive(pid) and not _named(owner)
    wait_for(lambda: lease_name(owner) not in ray.util.list_named_actors(), 10,
             "the lease to be killed")


def test_a_restart_while_the_expired_lease_releases_waits_for_it_instead_of_adopting(
        ray_cluster: RayCluster, tmp_path: Path, out: Path, services: list[Service]) -> None:
    """The old service's lease has expired and is stopping its worker (``stubborn``: ignores
    SIGTERM, so it lives through the lease's 8 s grace). A restart in that window used to adopt
    the attempt, whose actors the lease then killed: attempt 1 ended ``lost``. Now the restart
    waits until the lease has ended and finds nothing to adopt, as after any expiry."""
    old = _service(ray_cluster, tmp_path, grace=8.0, orphan_timeout=2.0)
    job = submit(old, SubmitRequest(command=worker("stubborn", out), gpus=1)).id
    pid = _pid(out, job)
    wait_for(lambda: old.store.attempts(job) and old.store.attempts(job)[0].pids, 10,
             "the launch to be recorded")
    crash(old)
    time.sleep(4.0)  # last renewal <= 1 s before the crash, timeout 2 s, checked every 0.5 s
    assert alive(pid)  # SIGTERMed by the lease, ignored: SIGKILL comes after the grace

    new = _service(ray_cluster, tmp_path, grace=1.0)
    services.append(new)
    assert not alive(pid)
    assert "adopted" not in [e.kind for e in new.store.events(job)]
    assert [(a.number, a.outcome) for a in new.store.attempts(job)][0] == (1, "abandoned")
    wait_for((out / f"{job}-a2-r0.json").exists, 60, "its second attempt to start")
    assert lease_name(new.executor.owner) in ray.util.list_named_actors()  # type: ignore[attr-defined]
