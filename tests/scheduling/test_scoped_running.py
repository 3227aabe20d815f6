"""The preemption plugin's running jobs per victim scope, kept across cycles (issue 14): each
scope's index is handed only the jobs that started since (``Preemption._starts``: the entries of
the core's running table after the one that was last, while it runs the same attempt). On
random starts, stops, restarts (of the table's last job too) and re-rates, and cycles that read
a random few scopes, every scope's index ranks exactly that scope's running jobs. Handing no
starts, or trusting a last entry that started again, fails here."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from dlsched.scheduling.plugins.preemption import Preemption
from dlsched.workload.job import Job, JobSpec, JobStatus


class _ByDuration:
    """A QueueSort whose running keys are fixed (the ``RankedRunning`` index)."""

    name = "by-duration"
    running_static = True

    def sort_key(self, state: Any, job: Job) -> tuple[float, str]:
        return (job.spec.work, job.job_id)


def _cycle(table: dict[str, Job], now: float) -> Any:
    return SimpleNamespace(snapshot=SimpleNamespace(running=table.values()), scratch={},
                           now=now, evicted={})


def test_each_scope_ranks_its_running_jobs_across_cycles() -> None:
    rng = random.Random(7)
    scopes = ("a", "b", "c", "d")
    jobs = [Job(JobSpec(f"j{i}", 0.0, 1, 100.0 + i, queue=rng.choice(scopes)))
            for i in range(120)]
    probes = {s: Job(JobSpec(f"probe-{s}", 0.0, 1, 1.0, queue=s)) for s in scopes}
    plugin = Preemption(_ByDuration())  # type: ignore[arg-type]
    plugin.victim_scope = lambda job: job.spec.queue
    table: dict[str, Job] = {}
    now, checked = 0.0, 0

    def start(job: Job) -> None:
        job.status, job.run_started = JobStatus.RUNNING, now
        job.epoch += 1
        table[job.job_id] = job

    def stop(job: Job) -> None:
        del table[job.job_id]
        job.status, job.run_started = JobStatus.PENDING, None
        job.epoch += 1

    for _ in range(600):
        now += rng.choice((0.0, 1.0))  # a restart may come at the same time as its start
        move = rng.random()
        waiting = [j for j in jobs if j.job_id not in table]
        if move < 0.45 and waiting:
            start(rng.choice(waiting))
        elif move < 0.7 and table:
            stop(rng.choice(list(table.values())))
        elif move < 0.85 and table:  # the table's last job stops and starts again
            last = next(reversed(table.values()))
            stop(last)
            if rng.random() < 0.5 and waiting:
                start(rng.choice(waiting))
            start(last)
        elif table:
            rng.choice(list(table.values())).epoch += 1  # re-rated: same attempt
        if rng.random() < 0.4:
            continue
        state = _cycle(table, now)
        for scope in rng.sample(scopes, rng.randint(1, len(scopes))):
            index = plugin._scoped_index(state, probes[scope])  # type: ignore[arg-type]
            got = [job.job_id for job in index.above((0.0, ""))]
            want = [job.job_id for job in sorted(
                (j for j in table.values() if j.spec.queue == scope),
                key=lambda j: (j.spec.work, j.job_id), reverse=True)]
            assert got == want
            checked += 1
    assert checked > 500
