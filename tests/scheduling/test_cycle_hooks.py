"""The cycle's framework hooks (issue 6, part 2): Permit counts in the victim search, a PreFilter
``UNSCHEDULABLE`` goes on to PostFilter (``UNRESOLVABLE`` stops), the failed PreFilter must pass
after the evictions, and ``skip_queue`` closes a tenant queue for the rest of the cycle.

One node of 4 GPUs; running r1 and r2 hold 2 GPUs each (r1 first, both evictable)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pytest
from builders import make_cluster

from dlsched.perf.model import LinearScaling
from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.cycle import run_cycle, skip_queue
from dlsched.scheduling.decisions import CycleResult
from dlsched.scheduling.framework import SUCCESS, Code, Status
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import ClusterSnapshot, CycleState, whole_free_per_node
from dlsched.workload.job import Job, JobSpec, JobStatus

Check = Callable[[CycleState, Job], Status]


def _running(job_id: str, gpus: tuple[int, ...]) -> Job:
    job = Job(JobSpec(job_id, 0.0, len(gpus), 1e6))
    job.status, job.allocation, job.shares = JobStatus.RUNNING, gpus, (1.0,) * len(gpus)
    job.run_started = 0.0
    return job


def _cycle(plugins: list, waiting: Iterable[Job], full: bool = True) -> CycleResult:
    cluster = make_cluster(nodes=1, gpus=4)
    running = (_running("r1", (0, 1)), _running("r2", (2, 3))) if full else ()
    free = np.ones(cluster.num_gpus)
    for job in running:
        free[list(job.allocation)] = 0.0
    snapshot = ClusterSnapshot(cluster, 10.0, free, whole_free_per_node(cluster, free),
                               np.zeros(1, dtype=np.int64), running, tuple(waiting),
                               LinearScaling())
    profile = Profile("hooks", _NonStatic(), plugins, strict_fifo=False)
    return run_cycle(profile, snapshot)


def _wait(job_id: str, gpus: int = 2, queue: str = "default", at: float = 0.0) -> Job:
    return Job(JobSpec(job_id, at, gpus, 100.0, queue=queue))


class _NonStatic(SubmitOrder):
    static = False  # so the cycle walks ``in_order`` (the tenant layer's path)


@dataclass
class Victims:
    """PostFilter: nominates r1 then r2 (counts its calls)."""

    name: str = "victims"
    calls: int = 0

    def post_filter(self, state: CycleState, job: Job) -> Iterable[Job]:
        self.calls += 1
        return [j for j in state.snapshot.running if j.job_id not in state.evicted]


@dataclass
class NeedsEvicted:
    """Permit or PreFilter: passes only once ``victim`` is evicted (a quota held by it)."""

    victim: str
    code: Code = Code.UNSCHEDULABLE
    name: str = "needs"
    calls: list[str] = field(default_factory=list)

    def check(self, state: CycleState, job: Job) -> Status:
        self.calls.append(job.job_id)
        return SUCCESS if self.victim in state.evicted else Status(self.code, "held", self.name)


class NeedsEvictedPermit(NeedsEvicted):
    def permit(self, state: CycleState, job: Job, gpus: tuple[int, ...]) -> Status:
        return self.check(state, job)


class NeedsEvictedPreFilter(NeedsEvicted):
    def pre_filter(self, state: CycleState, job: Job) -> Status:
        return self.check(state, job)


def _outcome(result: CycleResult) -> tuple[list[str], list[str]]:
    return [s.job_id for s in result.starts], [p.job_id for p in result.preemptions]


def test_the_victim_search_asks_permit_and_keeps_only_the_victims_needed() -> None:
    # Greedy: r1 frees 2 GPUs (nodes fit) but Permit wants r2 gone; r2 too; then r1 is given
    # back (it is not needed). Without Permit in the search, r1 alone would be taken and the
    # final Permit would reject the job.
    result = _cycle([Victims(), NeedsEvictedPermit("r2")], [_wait("w")])
    assert _outcome(result) == (["w"], ["r2"])


@pytest.mark.parametrize(("code", "want", "post_filter_calls"), [
    # UNSCHEDULABLE: PostFilter may help; r1 is what the PreFilter waits for.
    (Code.UNSCHEDULABLE, (["w"], ["r1"]), 1),
    # UNRESOLVABLE: nothing can help; PostFilter is not asked.
    (Code.UNRESOLVABLE, ([], []), 0),
], ids=["unschedulable-preempts", "unresolvable-stops"])
def test_a_pre_filter_failure_goes_on_to_post_filter_unless_unresolvable(
        code: Code, want: tuple, post_filter_calls: int) -> None:
    victims = Victims()
    result = _cycle([victims, NeedsEvictedPreFilter("r1", code)], [_wait("w")])
    assert _outcome(result) == want
    assert victims.calls == post_filter_calls
    if not want[0]:
        assert result.reasons["w"] == "[needs] held"


def test_the_failed_pre_filter_must_pass_after_the_evictions() -> None:
    # It waits for a job that is never evicted (as a retry backoff does): the victims found for
    # the nodes are given back and nothing starts.
    pre = NeedsEvictedPreFilter("nobody")
    result = _cycle([Victims(), pre], [_wait("w")])
    assert _outcome(result) == ([], [])
    assert pre.calls == ["w", "w"]  # once, and once more after the tentative evictions


@dataclass
class CloseOnFail:
    """PreFilter: ``closed`` queue jobs fail; the first failure closes the queue."""

    name: str = "close"
    seen: list[str] = field(default_factory=list)

    def pre_filter(self, state: CycleState, job: Job) -> Status:
        self.seen.append(job.job_id)
        if job.spec.queue != "closed":
            return SUCCESS
        skip_queue(state, "closed", f"closed by {job.job_id}")
        return Status(Code.UNRESOLVABLE, "no", self.name)


def test_skip_queue_closes_a_queue_for_the_rest_of_the_cycle() -> None:
    plugin = CloseOnFail()
    jobs = [_wait("c1", 1, "closed", 0), _wait("o1", 1, "open", 1), _wait("c2", 1, "closed", 2),
            _wait("o2", 1, "open", 3), _wait("c3", 1, "closed", 4)]
    result = _cycle([plugin], jobs, full=False)
    assert plugin.seen == ["c1", "o1", "o2"]  # c2 and c3 are never tried
    assert _outcome(result) == (["o1", "o2"], [])
    assert result.blocked == {"closed": "closed by c1"}


def test_the_pre_filters_after_the_failed_one_run_before_the_job_starts() -> None:
    # The first PreFilter is satisfied by evicting r1; the second (a backoff, say) never is:
    # nothing starts and r1 stays.
    later = NeedsEvictedPreFilter("nobody", name="later")
    result = _cycle([Victims(), NeedsEvictedPreFilter("r1"), later], [_wait("w")])
    assert _outcome(result) == ([], [])
    assert later.calls == ["w"]
