"""A MIG job adopted after a restart keeps the instance its workers run on: the core placed it
anew (the placement's choice on that GPU), which could differ from the slices the running
worker holds (its ``DLSCHED_MIG_START``), so a later job could be given slices in use."""

from __future__ import annotations

import json
from pathlib import Path

from runtime_helpers import crash, wait_for, worker

from dlsched.runtime.commands import cancel, submit
from dlsched.runtime.models import SubmitRequest
from dlsched.runtime.server import local_cluster
from dlsched.runtime.service import Service, ServiceConfig


def _config(root: Path) -> ServiceConfig:
    return ServiceConfig(local_cluster(1, "A100"), root / "data", grace_seconds=1.0,
                         poll_seconds=0.05, retry_backoff=0.0)


def _start(out: Path, job_id: str) -> int:
    path = out / f"{job_id}-a1-r0.json"
    wait_for(path.exists, 15, f"{job_id} to start")
    return int(json.loads(path.read_text())["DLSCHED_MIG_START"])


def test_an_adopted_mig_worker_keeps_its_slices(tmp_path: Path, out: Path,
                                                 services: list[Service]) -> None:
    old = Service(_config(tmp_path))
    old.start()
    first, kept = (submit(old, SubmitRequest(command=worker("sleep", out, 60), gpus=1,
                                             mig_profile="1g")).id for _ in range(2))
    starts = {job: _start(out, job) for job in (first, kept)}
    cancel(old, first)  # the kept one's slice is no longer where a lone 1g would go
    wait_for(lambda: old.store.attempts(first)[0].outcome is not None, 10, "the cancel")
    crash(old)

    new = Service(_config(tmp_path))
    services.append(new)
    new.start()
    assert "adopted" in [e.kind for e in new.store.events(kept)]
    assert new.core.mig is not None
    assert new.core.mig.slot(kept) == ("1g.5gb", starts[kept])
