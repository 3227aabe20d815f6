"""Targets given as a change (``allocation.Targets``): kept jobs cost the cycle nothing and
end as a full mapping would; a wrong ``kept`` is the policy's error."""

from __future__ import annotations

import pytest
from builders import make_cluster, make_job, running_job, snapshot_of

from dlsched.scheduling.allocation import Assignment, Targets
from dlsched.scheduling.allocation_cycle import AllocationError, run_allocation_cycle
from dlsched.scheduling.state import CycleState
from dlsched.workload.job import Job


class Given:
    """An allocator that returns the same ``Targets`` every time."""

    name = "given"

    def __init__(self, targets: dict[str, tuple[int, ...]], kept: set[str]) -> None:
        self.targets = Targets({j: Assignment(n) for j, n in targets.items()}, frozenset(kept))

    def allocate(self, state: CycleState) -> Targets:
        return self.targets


_running, _snapshot = running_job, snapshot_of


# Two nodes of 2 GPUs. K holds GPU 0 and is kept; M holds GPU 2 and moves to node 0;
# P holds GPU 3 and is in neither (preempted); W waits and starts on node 1.
def test_kept_jobs_stay_others_move_start_or_stop() -> None:
    cluster = make_cluster(nodes=2, gpus=2)
    k, m, p = _running("K", (0,)), _running("M", (2,)), _running("P", (3,))
    w = Job(make_job("W").build())
    given = Given({"M": (0,), "W": (1,)}, {"K"})
    result = run_allocation_cycle(given, _snapshot(cluster, [k, m, p], [w]))
    assert [x.job_id for x in result.preemptions] == ["P"]
    assert [(x.job_id, x.gpus) for x in result.resizes] == [("M", (1,))]
    assert [(x.job_id, x.gpus) for x in result.starts] == [("W", (2,))]


@pytest.mark.parametrize(("targets", "kept", "message"), [
    ({}, {"W"}, "not running"),          # only a running job can keep what it holds
    ({"K": (1,)}, {"K"}, "both kept"),   # kept and moved at once
], ids=["waiting-kept", "kept-and-targeted"])
def test_a_wrong_kept_set_is_the_policy_s_error(targets: dict[str, tuple[int, ...]],
                                                 kept: set[str], message: str) -> None:
    cluster = make_cluster(nodes=1, gpus=2)
    k, w = _running("K", (0,)), Job(make_job("W").build())
    with pytest.raises(AllocationError, match=message):
        run_allocation_cycle(Given(targets, kept), _snapshot(cluster, [k], [w]))


@pytest.mark.parametrize(("targets", "checked"), [
    ({}, False),          # every running job kept: no target to check against the jobs
    ({"W": (1,)}, True),  # a start: its size checked (the policy's bounds asked for)
], ids=["all-kept", "one-start"])
def test_a_round_that_keeps_every_job_checks_no_target(
        targets: dict[str, tuple[int, ...]], checked: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    import dlsched.scheduling.allocation_cycle as cycle
    from dlsched.scheduling.hooks import BoundedAllocator

    asked: list[type] = []
    optional = cycle.optional

    def counted(plugin, hook):  # type: ignore[no-untyped-def]
        asked.append(hook)
        return optional(plugin, hook)

    monkeypatch.setattr(cycle, "optional", counted)
    cluster = make_cluster(nodes=2, gpus=2)
    k, w = _running("K", (0,)), Job(make_job("W").build())
    result = run_allocation_cycle(Given(targets, {"K"}), _snapshot(cluster, [k], [w]))
    assert not result.preemptions and (BoundedAllocator in asked) == checked



class _Watched(tuple):
    """Running jobs that count the passes over them (``mapping``: as the core's live view
    of its running table offers it, when given)."""

    passes = 0

    def __iter__(self):  # type: ignore[no-untyped-def]
        _Watched.passes += 1
        return super().__iter__()


@pytest.mark.parametrize("live_view", [False, True], ids=["tuple", "core-view"])
def test_a_round_that_keeps_every_running_job_walks_none_and_books_nothing(
        live_view: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # Gavel's FIFO keeps every running job in 331 of its 393 rounds at 1,000 jobs: such a
    # round walks no running job and reads and writes back no free share (issue 13); the
    # kept set is still checked (against the core's table itself when the view offers it)
    import dataclasses

    written: list[int] = []
    monkeypatch.setattr(CycleState, "write_books",
                        lambda self, *args: written.append(1))  # type: ignore[misc]
    cluster = make_cluster(nodes=2, gpus=2)
    k, m, w = _running("K", (0,)), _running("M", (2,)), Job(make_job("W").build())
    running = _Watched((k, m))
    if live_view:
        running.mapping = {"K": k, "M": m}  # type: ignore[attr-defined]
    snapshot = dataclasses.replace(_snapshot(cluster, [k, m], [w]), running=running)
    _Watched.passes = 0
    result = run_allocation_cycle(Given({}, {"K", "M"}), snapshot)
    assert not result.preemptions and not result.resizes and not result.starts
    assert list(result.reasons) == ["W"] and not written
    assert _Watched.passes == (0 if live_view else 1)  # (the kept set's check of a tuple)
    with pytest.raises(AllocationError, match="not running"):
        run_allocation_cycle(Given({}, {"K", "W"}), snapshot)


def test_the_cycle_reads_the_one_method_hooks_without_optional(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``allocation_cycle._method``: ``ExplainingAllocator`` and ``RejectingAllocator`` have
    # one method each, read by name (``optional`` passes over a hook's members each call).
    from dlsched.scheduling import allocation_cycle, hooks

    for hook, name in ((hooks.ExplainingAllocator, "reason_for"),
                       (hooks.RejectingAllocator, "rejections")):
        assert [n for n, v in vars(hook).items()
                if not n.startswith("_") and callable(v)] == [name]
    asked = []
    monkeypatch.setattr(allocation_cycle, "optional",
                        lambda plugin, hook: asked.append(hook) or hooks.optional(plugin, hook))

    class Explained(Given):
        def reason_for(self, job_id: str) -> str:
            return f"why {job_id}"

    cluster = make_cluster(nodes=1, gpus=2)
    k, w = _running("K", (0,)), Job(make_job("W").build())
    result = run_allocation_cycle(Explained({}, {"K"}), _snapshot(cluster, [k], [w]))
    assert result.reasons == {"W": "why W"} and asked == []
    result = run_allocation_cycle(Given({}, {"K"}), _snapshot(cluster, [k], [w]))
    assert result.reasons == {"W": "[given] no GPUs in this round's allocation"}
    assert asked == []
