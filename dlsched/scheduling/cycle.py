"""One scheduling cycle, in numbered steps (after Kueue's):

1. order the waiting jobs (QueueSort);
2. for each: PreFilter, then place (Filter + Score, gang-whole);
3. if it does not fit: PostFilter nominates victims; evict the fewest that let it fit;
4. Permit and Reserve; strict FIFO stops at the first job that does not fit;
5. collect the earliest wake-up any plugin asks for.

The cycle reads a ``ClusterSnapshot`` and returns a ``CycleResult``; it never mutates jobs.
"""

from __future__ import annotations

import numpy as np

from dlsched.scheduling.decisions import CycleResult, Preempt, Start
from dlsched.scheduling.framework import SUCCESS, Code, Status
from dlsched.scheduling.placement import filter_nodes, place
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import ClusterSnapshot, CycleState
from dlsched.workload.job import Job


def run_cycle(profile: Profile, snapshot: ClusterSnapshot) -> CycleResult:
    state = CycleState.begin(snapshot)
    order = sorted(snapshot.waiting, key=lambda j: profile.queue_sort.sort_key(state, j))
    starts: list[Start] = []
    preemptions: list[Preempt] = []
    reasons: dict[str, str] = {}
    misses: set[tuple] = set()
    default_reason = ""
    for job in order:
        if state.blocked_by is not None:
            default_reason = f"waiting behind {state.blocked_by} (strict FIFO)"
            break
        status, evicted = _try_job(profile, state, job, misses)
        if status.ok:
            starts.append(Start(job.job_id, state.started[job.job_id],
                                (job.spec.gpu_share,) * job.spec.num_gpus))
            preemptions.extend(Preempt(v.job_id, f"preempted by {job.job_id}") for v in evicted)
            continue
        reasons[job.job_id] = str(status)
        for plugin in profile.blocked:
            plugin.on_unschedulable(state, job, status)
        if profile.strict_fifo:
            state.blocked_by = job.job_id
    wakeups = [w for p in profile.wakeups if (w := p.next_wakeup(state)) is not None]
    return CycleResult(tuple(starts), tuple(preemptions), reasons, default_reason,
                       min(wakeups) if wakeups else None, tuple(j.job_id for j in order))


def _try_job(profile: Profile, state: CycleState, job: Job,
             misses: set[tuple]) -> tuple[Status, tuple[Job, ...]]:
    for plugin in profile.pre_filters:
        status = plugin.pre_filter(state, job)
        if not status.ok:
            return status, ()
    shape = _shape(job)
    if shape in misses:
        return Status(Code.UNSCHEDULABLE, "an identical job did not fit in this cycle",
                      "placement"), ()
    status = _place(profile, state, job)
    if status.ok:
        return status, ()
    for plugin in profile.post_filters:
        victims = _fewest_victims(profile, state, job, plugin.post_filter(state, job))
        if victims:
            return _place(profile, state, job), victims
    if not profile.preemptive:
        misses.add(shape)  # with preemption, the next job of this shape may outrank others
    return status, ()


def _place(profile: Profile, state: CycleState, job: Job) -> Status:
    gpus, status = place(state, job, profile.filters, profile.scores, profile.take_limit)
    if not status.ok:
        return status
    for plugin in profile.permits:
        permitted = plugin.permit(state, job, gpus)
        if not permitted.ok:
            state.give_back(gpus, [job.spec.gpu_share] * len(gpus))
            return permitted
    state.started[job.job_id] = gpus
    for plugin in profile.reserves:
        plugin.reserve(state, job, gpus)
    return SUCCESS


def _fits(profile: Profile, state: CycleState, job: Job) -> bool:
    """Would the job fit now? Places it tentatively and gives the GPUs back."""
    gpus, status = place(state, job, profile.filters, profile.scores, profile.take_limit)
    if status.ok:
        state.give_back(gpus, [job.spec.gpu_share] * len(gpus))
    return status.ok


def _fewest_victims(profile: Profile, state: CycleState, job: Job,
                    candidates: tuple[Job, ...]) -> tuple[Job, ...]:
    """Evict candidates in order until the job fits, then give back every victim it does not
    need, the most important first (Kueue's "remove greedily, then give back")."""
    if not candidates:
        return ()
    mask, status = filter_nodes(state, job, profile.filters)
    if not status.ok:
        return ()
    evicted: list[Job] = []
    for victim in candidates:
        state.evict(victim)
        evicted.append(victim)
        if _room(state, job, mask) >= job.spec.num_gpus and _fits(profile, state, job):
            break
    else:
        _restore(state, evicted)
        return ()
    for victim in list(reversed(evicted[:-1])):
        _restore(state, [victim])
        if not _fits(profile, state, job):
            state.evict(victim)
        else:
            evicted.remove(victim)
    return tuple(evicted)


def _room(state: CycleState, job: Job, mask: np.ndarray) -> int:
    return int(state.capacity(job.spec.gpu_share)[mask].sum())


def _restore(state: CycleState, victims: list[Job]) -> None:
    for victim in victims:
        state.take(victim.allocation, victim.spec.gpu_share)
        del state.evicted[victim.job_id]


def _shape(job: Job) -> tuple:
    spec = job.spec
    return (spec.num_gpus, spec.gpu_share, spec.gpu_types, spec.pool, spec.model)
