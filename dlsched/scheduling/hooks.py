"""Optional hooks a plugin may offer beside its extension points, declared as protocols, and
the check a profile runs on every plugin it is given.

The extension points are in ``framework.py`` (and ``AllocatePlugin`` in ``allocation.py``);
a plugin implements at least one. These hooks refine a point and mean nothing alone:

- QueueSort: ``static`` (the key depends only on the job: the core keeps the queue sorted),
  ``lane_safe`` (its Reserve, PostFilter and wake-up may be driven by the core's fast lane:
  ``fast_start.py``; its key never changes while jobs wait),
  ``ordered(state)`` (generates the order lazily), ``rank_epoch(state, job, mask)`` (what the
  ranks of a failed preemptor's possible victims depend on: while unchanged the attempt is not
  retried), ``pending`` (the last cycle's reasons and queue positions, read by reports),
  ``use_throughput(model)`` (the core gives a static key the run's throughput model),
  ``walk_waiting(run)`` (the policy walks the waiting jobs itself, returning the skipped
  buckets' reasons, or None for the core's walk: backfill's index);
- PostFilter: ``no_victims(state, job)`` (True only where ``post_filter`` would nominate no
  one: the cycle then fails a job that does not fit by the free counts without the search),
  ``wait_detail(job, running, now)`` (why the running jobs it may not preempt keep their GPUs:
  added to a waiting job's placement reason when the reason is read, simulator and runtime
  alike: ``Scheduler.reason_for``);
- Filter: ``static`` (the mask depends only on the job: cached per job shape);
- Score: ``best_single(capacity, mask)`` (the best node for a one-worker job, in one pass);
  ``choose_gpus(state, job, node, count)`` (which GPUs of the chosen node the workers get,
  e.g. FGD's fragmentation-minimising GPU; default: ``placement.pick_gpus``);
- Allocate: ``worker_bounds(job)``, ``rejections(state)``, ``reason_for(job_id)``,
  ``changes_nothing(running, changes, down_nodes)`` with ``skip_cycle(now)`` (a cycle
  with no waiting job would keep every running job as it is: the core skips it and tells
  the plugin, which notes it as run).

A misspelt method (``prefilter`` for ``pre_filter``) would be ignored silently; a profile
rejects a plugin that implements no extension point, and any public method that looks like a
hook's name without being one (Kubernetes rejects an unknown plugin name in a profile).
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from dlsched.scheduling.state import CycleState
    from dlsched.workload.job import Job

EXTENSION_POINTS = ("sort_key", "pre_filter", "filter", "score", "post_filter", "permit",
                    "reserve", "on_unschedulable", "next_wakeup", "allocate")
OPTIONAL_HOOKS = ("static", "lane_safe", "ordered", "rank_epoch", "victim_miss_scope", "pending",
                  "use_throughput", "walk_waiting", "no_victims", "wait_detail",
                  "best_single", "worker_bounds", "rejections", "reason_for", "choose_gpus",
                  "changes_nothing", "skip_cycle")


@runtime_checkable
class LazyOrder(Protocol):
    """A QueueSort that yields the waiting jobs in order itself (the tenant layer)."""

    def ordered(self, state: CycleState) -> Iterable[Job]: ...


@runtime_checkable
class RankEpoch(Protocol):
    """A preemptive QueueSort whose ranks change only at known moments (Tiresias' levels)."""

    def rank_epoch(self, state: CycleState, job: Job, mask: np.ndarray) -> Hashable: ...


@runtime_checkable
class NoVictims(Protocol):
    """A PostFilter that can tell, cheaper than its search, that it has no victims for a job
    (Tiresias: a waiting job of the last queue has no lower queue to preempt; SRTF and EDF's
    ``Preemption``: no running job ranks after it, read from the running jobs' index)."""

    def no_victims(self, state: CycleState, job: Job) -> bool: ...


@runtime_checkable
class WaitDetail(Protocol):
    """A PostFilter that says which running jobs it may not preempt for a waiting job and by
    what rule (Tiresias: those of the job's own queue and above; SRTF and EDF's
    ``Preemption``: those ranked at or above it, or protected by ``min_runtime``), or None
    where none holds
    GPUs. Asked only when a reason is read (jobs.csv, the REST API), never in a cycle."""

    def wait_detail(self, job: Job, running: Mapping[str, Job], now: float) -> str | None: ...


@runtime_checkable
class VictimMissScope(Protocol):
    """A QueueSort under which victims are searched per scope (the tenant layer: a job's
    cluster queue and flavor): within a cycle, a job whose placement and victim search failed
    tells that a later job of its scope and shape asking no fewer GPUs fails them too.
    ``victims_short``: after such a failure, the most GPUs that may be wholly free for it to
    fail again (evicting every candidate of every search would still leave too little room),
    or None when a search failed for another reason."""

    def victim_miss_scope(self, state: CycleState, job: Job) -> Hashable | None: ...

    def victims_short(self, state: CycleState, job: Job, free_max: int | None) -> None: ...


@runtime_checkable
class SingleNodeScore(Protocol):
    """A Score that picks the best node for one worker directly."""

    def best_single(self, capacity: np.ndarray, mask: np.ndarray) -> int | None: ...


@runtime_checkable
class BoundedAllocator(Protocol):
    """An AllocatePlugin's fewest and most workers per job (default ``worker_bounds``)."""

    def worker_bounds(self, job: Job) -> tuple[int, int]: ...


@runtime_checkable
class RejectingAllocator(Protocol):
    """An AllocatePlugin that refuses some waiting jobs for good (job id -> reason)."""

    def rejections(self, state: CycleState) -> Mapping[str, str]: ...


@runtime_checkable
class ExplainingAllocator(Protocol):
    """An AllocatePlugin that says why a job got no GPUs this round (None: no reason)."""

    def reason_for(self, job_id: str) -> str | None: ...


@runtime_checkable
class SettledAllocator(Protocol):
    """An AllocatePlugin that can tell, without a cycle, that a cycle now would keep every
    running job on its GPUs and start nothing (no job waits). ``changes``: the core's count of
    running-job changes (``Scheduler.running_changes``), for the plugin to keep its answer
    while it does not move. The core then skips the cycle and calls ``skip_cycle``: the plugin
    notes it as a cycle that ran (Gandiva's quantum clock)."""

    def changes_nothing(self, running: Mapping[str, Job], changes: int,
                        down_nodes: frozenset[int]) -> bool: ...

    def skip_cycle(self, now: float) -> None: ...


H = TypeVar("H")
_MEMBERS: dict[type, tuple[str, ...]] = {}


def optional(plugin: Any, hook: type[H]) -> H | None:
    """``plugin`` typed as ``hook`` when it has the hook's methods, else None. A lookup by
    name: ``isinstance`` on a runtime protocol costs ~50 us on Python 3.11, too much per
    cycle; profiles resolve their hooks once, when built."""
    members = _MEMBERS.get(hook)
    if members is None:
        members = _MEMBERS[hook] = tuple(n for n, v in vars(hook).items()
                                         if not n.startswith("_") and callable(v))
    return plugin if all(callable(getattr(plugin, m, None)) for m in members) else None


def plugin_label(plugin: Any) -> str:
    name = getattr(plugin, "name", None)
    kind = type(plugin).__name__
    return f"{name!r} ({kind})" if isinstance(name, str) and name else kind


def check_plugin(profile: str, plugin: Any) -> None:
    """Raise ValueError naming the plugin when it implements no extension point, or has a
    method named almost like a point or hook (a misspelling the core would ignore)."""
    points = [p for p in EXTENSION_POINTS if callable(getattr(plugin, p, None))]
    hint = _misspelt(plugin)
    if hint:
        raise ValueError(f"profile {profile}: plugin {plugin_label(plugin)} has {hint}")
    if not points:
        raise ValueError(f"profile {profile}: plugin {plugin_label(plugin)} implements no "
                         f"extension point (known: {', '.join(EXTENSION_POINTS)})")


def _misspelt(plugin: Any) -> str:
    known = (*EXTENSION_POINTS, *OPTIONAL_HOOKS)
    squashed = {name.replace("_", ""): name for name in known}
    for attr in _public_methods(plugin):
        if attr in known:
            continue
        match = squashed.get(attr.replace("_", "").lower()) or next(
            iter(difflib.get_close_matches(attr, known, n=1, cutoff=0.85)), None)
        if match:
            return f"a method {attr!r} that is no extension point: did you mean {match!r}?"
    return ""


def _public_methods(plugin: Any) -> list[str]:
    names = set(dir(type(plugin))) | set(getattr(plugin, "__dict__", {}))
    return sorted(n for n in names if not n.startswith("_")
                  and callable(getattr(plugin, n, None)))
