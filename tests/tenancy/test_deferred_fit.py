"""A carried miss whose quota fit is asked late (``Carried.deferred``, issue 14).

``TenantAdmission.carried_miss`` no longer checks the group's quota fit as the walk starts when
the miss tells from a later member on: most groups never reach that member in a cycle. The
walk asks the fit as the walk started (``start_fits``) at that member's turn instead; a group
that did not fit then carries no miss, as before, so its members are tried.
"""

from __future__ import annotations

from typing import Any

import pytest

from dlsched.tenancy.groups import Carried, Groups, GroupWalk
from dlsched.workload.job import Job, JobSpec


def _walk(fits_at_start: bool, deferred: bool) -> tuple[list[str], list[str]]:
    """The jobs the walk gives (a, b, c of one group; a miss carried from b on) and the
    groups whose start fit it asked."""
    jobs = [Job(JobSpec(name, 0.0, 2, 100.0, queue="cq")) for name in "abc"]
    groups = Groups(lambda job: {"gpu": float(job.spec.num_gpus)})
    entries = {job.job_id: (i, job.job_id) for i, job in enumerate(jobs)}
    for job in jobs:
        groups.join(job, "cq", entries[job.job_id])
        groups.mark(job.job_id, True)  # each tried before (a fresh job is tried in any case)
    groups.settle(entries)
    asked: list[str] = []

    def start_fits(group: Any) -> bool:
        asked.append(group.cq)
        return fits_at_start

    walk = GroupWalk(
        groups, key=lambda group, entry, job: (entry[0],),
        position=lambda group, entry: entry[0], droppable=lambda group: True,
        fits_queue=lambda cq: True, closed=lambda cq: False,
        status=lambda: (True, 0, 0), misses={}, flavor_of=lambda group: "f",
        free=lambda: 0, preemptive=True,
        carried=lambda group: Carried("told", False, 4, entries["b"], deferred=deferred),
        start_fits=start_fits)
    return [job.job_id for job in walk], asked


@pytest.mark.parametrize("deferred", [True, False])
def test_a_miss_that_fitted_at_the_start_drops_the_group_from_the_failed_member(
        deferred: bool) -> None:
    given, asked = _walk(fits_at_start=True, deferred=deferred)
    assert given == ["a"]
    assert asked == (["cq"] if deferred else [])  # asked once, at b's turn


def test_a_deferred_miss_that_did_not_fit_at_the_start_tells_nothing() -> None:
    given, asked = _walk(fits_at_start=False, deferred=True)
    assert given == ["a", "b", "c"]  # no miss was carried: every member is tried
    assert asked


def test_an_unchecked_miss_is_asked_nothing_once_checked() -> None:
    given, asked = _walk(fits_at_start=False, deferred=False)  # checked as the walk started
    assert given == ["a"] and asked == []
