"""A small cluster state for the dashboard tests (4 fake T4 GPUs, two tenant queues of 2 GPUs
each in one cohort): a finished job, a team-a job that borrows a GPU of team-b's idle quota, a
team-b job, and two jobs that wait for quota."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runtime_helpers import Live, wait_for, worker
from test_service_e2e import job, submit, wait_status

from dlsched.tenancy.loader import parse_tenants

TENANTS = """flavors:
  - {name: t4, gpu_types: [T4]}
cluster_queues:
  - {name: team-a, cohort: org, quotas: {t4: {gpu: 2}}}
  - {name: team-b, cohort: org, quotas: {t4: {gpu: 2}}}
local_queues:
  - {name: vision, cluster_queue: team-a}
"""


def tenants():  # type: ignore[no-untyped-def]
    return parse_tenants(TENANTS, "tenants.yaml")


@dataclass(frozen=True)
class Jobs:
    finished: str
    borrowing: str  # team-a, 3 GPUs: 1 above its nominal quota
    running_b: str
    waiting: str  # vision (team-a), 2 GPUs: no quota left
    waiting_b: str


def populate(live: Live, out: Path) -> Jobs:
    finished = submit(live, worker("sleep", out, 0.1), 1, queue="team-a", name="warm-up")
    wait_status(live, finished, "finished")
    borrowing = submit(live, worker("sleep", out, 600), 3, queue="team-a", name="resnet-big")
    wait_status(live, borrowing, "running")
    running_b = submit(live, worker("sleep", out, 600), 1, queue="team-b", name="bert-ft")
    wait_status(live, running_b, "running")
    waiting = submit(live, worker("sleep", out, 600), 2, queue="vision", name="vit-sweep")
    waiting_b = submit(live, worker("sleep", out, 600), 1, queue="team-b", name="bert-eval")
    wait_status(live, waiting, "pending")
    # A new job is pending at once; its reason comes with the service loop's next cycle.
    wait_for(lambda: "insufficient unused quota" in job(live, waiting)["pending_reason"], 30,
             "the waiting job's reason")
    return Jobs(finished, borrowing, running_b, waiting, waiting_b)
