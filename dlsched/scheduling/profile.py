"""A profile: the plugins a policy enables at each extension point, with score weights.

A plugin may implement several extension points (Tiresias sorts the queue and asks for wake-ups);
the profile sorts them into per-point lists once, when it is built.

A profile is a specification, reusable across runs: its plugins are configured prototypes that
no run touches. Each run (``Scheduler``) works on ``profile.instantiate()``, a private copy of
every plugin made from those prototypes, as Kubernetes builds a profile's plugins from their
factories for each scheduler (``frameworkruntime.NewFramework``). Plugins keep per-run state
(Themis' contention integral, Gandiva's rotation, Tiresias' demotion heap) in themselves, so
running one profile twice, or in two runs at once, gives the same results as two fresh ones.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dlsched.scheduling.allocation import AllocatePlugin
from dlsched.scheduling.framework import (
    BlockedPlugin,
    FilterPlugin,
    PermitPlugin,
    PostFilterPlugin,
    PreFilterPlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
    WakeupPlugin,
)
from dlsched.scheduling.hooks import (
    LazyOrder,
    NoVictims,
    RankEpoch,
    SettledAllocator,
    VictimMissScope,
    WaitDetail,
    check_plugin,
    optional,
    plugin_label,
)
from dlsched.scheduling.plugin_checks import CheckedScore
from dlsched.scheduling.plugins.filters import GpuTypeFilter, NodePoolFilter, RunnableFilter
from dlsched.scheduling.plugins.gang import GangPermit
from dlsched.scheduling.plugins.scores import (
    BestFit,
    Consolidated,
    MostFree,
    Spread,
    TopologyScore,
)

PLACEMENTS = ("consolidated", "spread", "best-fit", "topology", "most-free")
# GPU-sharing placements of the FGD paper (Weng et al., ATC'23; dlsched/fragmentation/).
SHARING_PLACEMENTS = ("fgd", "random", "dot-product", "gpu-clustering", "gpu-packing",
                      "cpu-gpu-best-fit")


def placement_scores(name: str) -> tuple[tuple[ScorePlugin, float], ...]:
    """Score plugins and weights for a named placement strategy."""
    if name == "consolidated":
        return ((Consolidated(), 1.0),)
    if name == "spread":
        return ((Spread(), 1.0),)
    if name == "best-fit":
        return ((BestFit(), 1.0),)
    if name == "topology":
        return ((TopologyScore(), 2.0), (Consolidated(), 1.0))
    if name == "most-free":
        return ((MostFree(), 1.0),)
    if name in SHARING_PLACEMENTS:
        from dlsched.fragmentation import SHARING_PLACEMENTS as PLUGINS

        return ((PLUGINS[name](), 1.0),)
    known = ", ".join((*PLACEMENTS, *SHARING_PLACEMENTS))
    raise ValueError(f"unknown placement {name!r} (known: {known})")


def default_filters() -> tuple[FilterPlugin, ...]:
    return (GpuTypeFilter(), NodePoolFilter(), RunnableFilter())


@dataclass
class Profile:
    """``strict_fifo``: stop at the first job that does not fit (no job overtakes it).
    ``round_seconds``: also run a cycle every round (None: only on events and wake-ups).
    ``acts_on_running``: the policy changes running jobs even when none waits (elastic
    resizing, periodic reallocation); otherwise a cycle with an empty queue is skipped."""

    name: str
    queue_sort: QueueSortPlugin
    plugins: Sequence[Any] = ()
    placement: str = "consolidated"
    filters: Sequence[FilterPlugin] = field(default_factory=default_filters)
    strict_fifo: bool = False
    round_seconds: float | None = None
    acts_on_running: bool = False
    options: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.round_seconds is not None and not self.round_seconds > 0:
            # A round of 0 s would schedule the next round at the same time, forever.
            raise ValueError(f"round_seconds must be > 0, got {self.round_seconds}")
        if not isinstance(self.queue_sort, QueueSortPlugin):
            raise ValueError(f"profile {self.name}: queue_sort {plugin_label(self.queue_sort)} "
                             "has no sort_key(state, job)")
        for plugin in (self.queue_sort, *self.plugins, *self.filters):
            check_plugin(self.name, plugin)
        everything = [self.queue_sort, *self.plugins, GangPermit()]
        # One tuple per profile (it keys placement caches): the default filters plus any
        # plugin that filters too (e.g. a per-round GPU type choice).
        extra = tuple(p for p in _having(everything, FilterPlugin) if p not in self.filters)
        self.filters = tuple(self.filters) + extra
        self.dynamic_filters = any(not getattr(f, "static", False) for f in self.filters)
        self.pre_filters = _having(everything, PreFilterPlugin)
        self.post_filters = _having(everything, PostFilterPlugin)
        self.permits = _having(everything, PermitPlugin)
        self.reserves = _having(everything, ReservePlugin)
        self.blocked = _having(everything, BlockedPlugin)
        self.wakeups = _having(everything, WakeupPlugin)
        # An allocation policy decides every job's GPUs at once (see allocation.py).
        self.allocators = _having(everything, AllocatePlugin)
        if len(self.allocators) > 1:
            raise ValueError(f"profile {self.name}: more than one allocation plugin")
        # A Score plugin of the policy's own joins the placement's scores (weighted sum, its
        # ``weight`` attribute or 1): left out, it was silently never called.
        self.scores = placement_scores(self.placement) + tuple(
            (CheckedScore(plugin), float(getattr(plugin, "weight", 1.0)))
            for plugin in _having(everything, ScorePlugin))
        self.take_limit = 1 if self.placement == "spread" else None
        # Jobs whose last attempt failed, with what that failure depended on (see cycle.py).
        self.futile: dict[str, tuple] = {}
        # A static order depends only on the job (FIFO, SJF): the core keeps it sorted.
        self.static_order = bool(getattr(self.queue_sort, "static", False))
        # The QueueSort's optional hooks (hooks.py), None where it has none.
        self.lazy_order = optional(self.queue_sort, LazyOrder)
        self.rank_epoch = optional(self.queue_sort, RankEpoch)
        self.victim_miss = optional(self.queue_sort, VictimMissScope)
        # Set when every PostFilter can tell a job it has no victims for (hooks.NoVictims).
        told = [optional(p, NoVictims) for p in self.post_filters]
        self.no_victims = tuple(told) if told and all(told) else None
        # PostFilters that say which running jobs they may not preempt (hooks.WaitDetail)
        self.wait_details = tuple(d for d in (optional(p, WaitDetail) for p in self.post_filters)
                                  if d is not None)
        # An allocator that tells a cycle changing nothing (hooks.SettledAllocator); none
        # when a plugin asks for wake-ups (a skipped cycle would not ask them).
        self.settled = (optional(self.allocators[0], SettledAllocator)
                        if self.allocators and not self.wakeups else None)

    @property
    def preemptive(self) -> bool:
        return bool(self.post_filters)

    def instantiate(self) -> Profile:
        """A copy of this profile for one run: every plugin a fresh copy of its prototype
        (one copy per plugin, however many points it serves and whatever wraps it, so a
        plugin that sorts and reserves still sees both calls) and no per-run memory."""
        memo: dict[int, Any] = {}
        fields = {k: v for k, v in vars(self).items() if k != "_copies"}
        run = object.__new__(Profile)
        run.__dict__.update(copy.deepcopy(fields, memo))
        run.futile = {}
        # deepcopy keeps the originals it copied alive in memo[id(memo)]
        run._copies = {id(o): (o, memo[id(o)]) for o in memo.get(id(memo), ()) if id(o) in memo}
        return run

    def instance_of(self, plugin: Any) -> Any:
        """The run's copy of ``plugin``, a prototype of the profile this one was instantiated
        from (the runtime service finds its retry-backoff plugin this way); ``plugin`` itself
        on a profile that was not instantiated."""
        copies: dict[int, tuple[Any, Any]] | None = getattr(self, "_copies", None)
        if copies is None:
            return plugin
        original, instance = copies[id(plugin)]
        if original is not plugin:
            raise KeyError(f"{plugin!r} is not a plugin of this profile")
        return instance


def _having(plugins: Sequence[Any], point: type) -> tuple[Any, ...]:
    seen: list[Any] = []
    for plugin in plugins:
        if isinstance(plugin, point) and plugin not in seen:
            seen.append(plugin)
    return tuple(seen)
