"""The waiting queue's orders against a model of them (issue 14: its lists were cut).

The model: a job filed under a static key goes after every job filed before it under an equal
key (``bisect_right``), so each order (the whole queue, each tenant queue, each bucket) is the
jobs sorted by (key, filing number). The per-queue lists are kept only once read, so the test
reads them at random points too.
"""

from __future__ import annotations

from collections.abc import Hashable

import pytest
from builders import make_job
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.scheduling.waiting import WaitingQueue
from dlsched.workload.job import Job

QUEUES = ("a", "b", "c")
STEPS = st.lists(st.tuples(st.sampled_from(("add", "pop", "rekey", "read", "forget")),
                           st.integers(0, 11), st.integers(0, 3)), max_size=80)


class _Model:
    """Every order is the waiting jobs sorted by (static key, filing number)."""

    def __init__(self) -> None:
        self.filed: dict[str, tuple[int, int]] = {}  # job -> (key, filing number)
        self.count = 0

    def add(self, job_id: str, key: int) -> None:
        self.count += 1
        self.filed[job_id] = (key, self.count)

    def order(self, jobs: dict[str, Job], keep: object = None) -> list[str]:
        chosen = [j for j in self.filed if keep is None or keep(jobs[j])]  # type: ignore
        return sorted(chosen, key=self.filed.__getitem__)


def _bucket(job: Job) -> Hashable:
    return int(job.job_id[1:]) % 3


@settings(max_examples=300, deadline=None)
@given(STEPS, st.booleans())
def test_orders_match_the_model(steps: list[tuple[str, int, int]], bucketed: bool) -> None:
    keys: dict[str, int] = {}
    queue = WaitingQueue(lambda job: keys[job.job_id], _bucket if bucketed else None)
    jobs = {f"j{n}": Job(make_job(f"j{n}").queue(QUEUES[n % 3]).build()) for n in range(12)}
    model = _Model()
    for action, n, key in steps:
        job_id = f"j{n}"
        if action == "add" and job_id not in queue:
            keys[job_id] = key
            queue.add(jobs[job_id])
            model.add(job_id, key)
        elif action == "pop" and job_id in queue:
            assert queue.pop(job_id) is jobs[job_id]
            del model.filed[job_id]
        elif action == "rekey" and job_id in queue:
            keys[job_id] = key
            queue.rekey(jobs[job_id])
            model.add(job_id, key)
        elif action == "read":
            _check_queues(queue, model, jobs)
        elif action == "forget" and job_id not in queue:
            queue.forget(job_id)
        assert [j.job_id for j in queue.ordered()] == model.order(jobs)
        # arrival order (``values``, the runtime's per-queue counts): by filing, a re-keyed
        # job last, as a new filing
        assert list(queue) == sorted(model.filed, key=lambda j: model.filed[j][1])
    _check_queues(queue, model, jobs)
    _check_buckets(queue, model, jobs, bucketed)


def _check_queues(queue: WaitingQueue, model: _Model, jobs: dict[str, Job]) -> None:
    by_queue = queue.by_queue()
    assert bool(by_queue) == bool(model.filed)
    expected = {name: model.order(jobs, lambda j, q=name: j.spec.queue == q) for name in QUEUES}
    assert {name: [j.job_id for j in lst] for name, lst in by_queue.items()} == {
        name: order for name, order in expected.items() if order}


def _check_buckets(queue: WaitingQueue, model: _Model, jobs: dict[str, Job],
                   bucketed: bool) -> None:
    if not bucketed:
        assert queue.buckets() == {}
        return
    expected = {b: model.order(jobs, lambda j, b=b: _bucket(j) == b) for b in range(3)}
    assert {b: [j.job_id for j in lst] for b, (_, lst) in queue.buckets().items()} == {
        b: order for b, order in expected.items() if order}
    for b, (bucket_keys, lst) in queue.buckets().items():
        assert bucket_keys == [model.filed[j.job_id][0] for j in lst]
        assert all(queue.bucket_named(j.job_id) == b for j in lst)


def test_per_queue_lists_wait_for_a_read() -> None:
    """A queue whose per-queue lists nobody read files each job in its order and its bucket
    only; the first read makes them, and from then on they are kept."""
    keys = {"j0": 2, "j1": 1, "j2": 1}
    queue = WaitingQueue(lambda job: keys[job.job_id], _bucket)
    for n, name in enumerate(("x", "y", "x")):
        queue.add(Job(make_job(f"j{n}").queue(name).build()))
    assert queue._by_queue == {}
    assert {q: [j.job_id for j in lst] for q, lst in queue.by_queue().items()} == {
        "x": ["j2", "j0"], "y": ["j1"]}
    queue.pop("j2")
    assert [j.job_id for j in queue._by_queue["x"]] == ["j0"]


def test_a_job_bucket_is_kept_while_it_may_come_back() -> None:
    """A started job's bucket is kept for its return; an ended one's is not (``forget`` after
    a finish, ``discard`` for any other way out)."""
    calls: list[str] = []

    def bucket(job: Job) -> Hashable:
        calls.append(job.job_id)
        return _bucket(job)

    queue = WaitingQueue(lambda job: 0, bucket)
    jobs = [Job(make_job(f"j{n}").build()) for n in range(3)]
    for job in jobs:
        queue.add(job)
    for job in jobs:
        queue.pop(job.job_id)  # started
        queue.add(job)  # preempted: the same bucket, not asked again
    assert calls == ["j0", "j1", "j2"]
    queue.pop("j0")
    queue.forget("j0")  # finished
    queue.discard("j1")  # cancelled while waiting
    assert queue._bucket_known == {"j2": _bucket(jobs[2])}


LAZY_STEPS = st.lists(st.tuples(st.sampled_from(("add", "pop", "rekey", "snap", "read")),
                                st.integers(0, 11), st.integers(0, 3)), max_size=80)


@settings(max_examples=300, deadline=None)
@given(LAZY_STEPS)
def test_a_bucketed_queue_sorts_its_whole_order_when_first_read(
        steps: list[tuple[str, int, int]]) -> None:
    """With buckets the whole order is kept only from its first read; a snapshot's order
    (``order_at``) read before the queue changes is the model's order at the snapshot,
    read after it raises; every later read and filing keeps matching the model."""
    keys: dict[str, int] = {}
    queue = WaitingQueue(lambda job: keys[job.job_id], _bucket)
    jobs = {f"j{n}": Job(make_job(f"j{n}").queue(QUEUES[n % 3]).build()) for n in range(12)}
    model = _Model()
    taken: tuple | None = None  # (the snapshot's order, the model's then, changed since)
    for action, n, key in steps:
        job_id = f"j{n}"
        if action == "add" and job_id not in queue:
            keys[job_id] = key
            queue.add(jobs[job_id])
            model.add(job_id, key)
        elif action == "pop" and job_id in queue:
            queue.pop(job_id)
            del model.filed[job_id]
        elif action == "rekey" and job_id in queue:
            keys[job_id] = key
            queue.rekey(jobs[job_id])
            model.add(job_id, key)
        elif action == "snap":
            taken = (queue.changes, model.order(jobs), False)
            continue
        elif action == "read" and taken is not None:
            changes, expected, changed = taken
            if changed:
                with pytest.raises(RuntimeError, match="read them during the snapshot's cycle"):
                    queue.order_at(changes)
            else:
                assert [j.job_id for j in queue.order_at(changes)] == expected
            taken = None
            continue
        else:
            continue
        if taken is not None:
            taken = (*taken[:2], True)
    _check_buckets(queue, model, jobs, True)
    assert [j.job_id for j in queue.ordered()] == model.order(jobs)
    assert list(queue) == sorted(model.filed, key=lambda j: model.filed[j][1])


class _Counted:
    """A key that counts its comparisons."""

    compared = 0

    def __init__(self, value: int) -> None:
        self.value = value

    def __lt__(self, other: _Counted) -> bool:
        _Counted.compared += 1
        return self.value < other.value


def test_a_bucketed_queue_files_a_job_without_the_whole_order() -> None:
    """Until something reads the whole order, a filing compares its key in its own bucket
    only (and once with the key filed last, so that keys that do not compare fail at their
    filing): a job that goes first in a queue of 64 others in other buckets costs one
    comparison, not a binary search over the 64."""
    jobs = [Job(make_job(f"j{n}").build()) for n in range(65)]
    keys = {job.job_id: _Counted(100 - n) for n, job in enumerate(jobs)}
    queue = WaitingQueue(lambda job: keys[job.job_id], lambda job: job.job_id)
    for job in jobs[:64]:
        queue.add(job)
    _Counted.compared = 0
    queue.add(jobs[64])
    assert _Counted.compared == 1
    assert queue.ordered()[0] is jobs[64] and queue.ordered()[-1] is jobs[0]


@pytest.mark.parametrize("static", [True, False], ids=["static", "arrival-order"])
def test_ids_are_a_live_view_of_the_waiting_jobs(static: bool) -> None:
    """``ids`` follows every change (the core reads its ``len`` twice a cycle, in C)."""
    keys = {"j0": 2, "j1": 1, "j2": 1}
    queue = WaitingQueue((lambda job: keys[job.job_id]) if static else None,
                         _bucket if static else None)
    ids = queue.ids
    for n in range(3):
        queue.add(Job(make_job(f"j{n}").build()))
    assert len(ids) == 3 == len(queue) and set(ids) == {"j0", "j1", "j2"}
    queue.rekey(queue["j1"])
    queue.pop("j0")
    queue.discard("j2")
    assert list(ids) == ["j1"] and len(ids) == len(queue) == 1
