"""``with_tenants(profile, config)``: any policy inside the tenant model, the policy unchanged
except for its QueueSort (the tenant layer orders across queues) and its PostFilter (limited to
victims of the preemptor's own cluster queue: victims across queues are Kueue's to choose).
An allocation policy's ``AllocatePlugin`` runs behind a ``QuotaGate`` (``allocation.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from dlsched.scheduling.profile import Profile
from dlsched.scheduling.state import CycleState
from dlsched.tenancy.allocation import QuotaGate
from dlsched.tenancy.config import AdmissionOrder, TenantConfig
from dlsched.tenancy.plugins import TenantAdmission
from dlsched.workload.job import Job

_POINTS = ("pre_filter", "filter", "score", "permit", "reserve", "on_unschedulable",
           "next_wakeup", "on_waiting", "relaunched")


class _Stripped:
    """A wrapped policy's plugin without its QueueSort: the tenant layer orders across queues.
    Its PostFilter (the policy's own preemption: Tiresias' 2D-LAS, SRTF) still runs, limited
    to victims of the preemptor's own cluster queue, so it cannot take another tenant's quota;
    victims across queues are the tenant layer's (Kueue's) to choose."""

    def __init__(self, inner: Any, config: TenantConfig) -> None:
        self.inner, self.name, self.config = inner, inner.name, config
        self.static = getattr(inner, "static", False)
        for point in _POINTS:
            if hasattr(inner, point):
                setattr(self, point, getattr(inner, point))
        if hasattr(inner, "post_filter"):
            if hasattr(inner, "victim_scope"):  # it keeps its running jobs per queue itself
                inner.victim_scope = QueueScope(config)
                self.post_filter = self._scoped_victims
            else:
                self.post_filter = self._same_queue_victims

    def _same_queue_victims(self, state: CycleState, job: Job) -> Iterable[Job]:
        own = self.config.cluster_queue_of(job.spec.queue)
        return (victim for victim in self.inner.post_filter(state, job)
                if own is not None and self.config.cluster_queue_of(victim.spec.queue) is own)

    def _scoped_victims(self, state: CycleState, job: Job) -> Iterable[Job]:
        """The inner PostFilter's victims, already of the job's own cluster queue only."""
        victims = self.inner.post_filter(state, job)
        return victims if self.inner.victim_scope(job) is not None else ()


class QueueScope:
    """A job's victim scope under tenants: the name of its cluster queue (None: unknown)."""

    def __init__(self, config: TenantConfig) -> None:
        self.config = config
        self._names: dict[str, str | None] = {}  # JobSpec.queue -> its cluster queue's name

    def __call__(self, job: Job) -> str | None:
        queue = job.spec.queue
        try:
            return self._names[queue]
        except KeyError:
            cq = self.config.cluster_queue_of(queue)
            name = self._names[queue] = cq.name if cq is not None else None
            return name


def with_tenants(profile: Profile, config: TenantConfig) -> Profile:
    """``profile``'s policy inside the tenant model, the policy itself unchanged."""
    if profile.allocators:
        return _allocating(profile, config)
    own = list({id(p): p for p in (profile.queue_sort, *profile.plugins)}.values())
    # A QueueSort whose only other point is ``on_waiting`` (backfill's index of waiting jobs,
    # idle once the tenant layer orders) is not kept: it would implement no extension point.
    kept = [_Stripped(p, config) for p in own
            if any(hasattr(p, point) for point in (*_POINTS, "post_filter")
                   if point != "on_waiting")]
    for plugin in own:  # the tenant layer orders and preempts by the policy's keys too
        if hasattr(plugin, "own_preemption_only"):
            plugin.own_preemption_only = False
    filters = [f for f in profile.filters if f not in own]
    admission = TenantAdmission(config, profile.queue_sort)
    wrapped = Profile(f"{profile.name}+tenants", admission, kept, placement=profile.placement,
                      filters=filters, strict_fifo=False, round_seconds=profile.round_seconds,
                      acts_on_running=profile.acts_on_running, options=dict(profile.options))
    # a job one of these fails after its quota was reserved is held by the policy's own rule
    admission.policy_plugins = frozenset(p.name for p in kept)
    admission.scoped_victims = _victims_per_queue(wrapped, admission)
    admission.policy_victims = _policy_victims(kept)
    admission.by_groups = _walks_by_groups(wrapped, admission)
    if admission.by_groups:
        admission.walk_gates = [p.inner.walk_ready for p in kept
                                if getattr(p.inner, "walk_ready", None) is not None]
        admission.walk_refusals = [p.inner.walk_refusal for p in kept
                                   if getattr(p.inner, "walk_refusal", None) is not None]
    # The wrapped policy preempts inside each queue: the walk drops a group only after a
    # failed victim search of its queue and priority.
    admission.preemptive_walk = admission.by_groups and len(wrapped.post_filters) > 1
    admission.groups.by_priority = admission.preemptive_walk
    epochs = [getattr(p.inner, "victims_epoch", None) for p in wrapped.post_filters
              if isinstance(p, _Stripped)]
    if admission.preemptive_walk and all(epoch is not None for epoch in epochs):
        admission.victim_epochs = epochs  # type: ignore[assignment]
    # A cycle that changed nothing stays so while only time moves, but for the wrapped
    # policy's own wake-ups (cycles of their own: its protection ends, Tiresias' demotions):
    # no PreFilter of it reads the time (backfill's shadow time does), and its victims are
    # told by ``victims_epoch`` (a policy without the hook may gain victims otherwise).
    admission.steady_when_quiet = admission.by_groups and not admission.walk_gates and (
        not admission.preemptive_walk or bool(admission.victim_epochs))
    if admission.steady_when_quiet:  # Tiresias: no wake-up for demotions that matter to none
        for plugin in own:
            if hasattr(plugin, "left_out") and hasattr(plugin, "quiet"):
                plugin.quiet = admission.quiet
                admission.left_out.append(plugin.left_out)
    return wrapped


def _policy_victims(kept: list[_Stripped]) -> Callable[[CycleState, Job], bool] | None:
    """Whether the wrapped policy's own preemption may find victims for a job: a PostFilter
    of it without ``no_victims`` may; one with it, unless it says no (Tiresias' last queue).
    None: the policy does not preempt (FIFO, backfill)."""
    told = [getattr(p.inner, "no_victims", None) for p in kept if hasattr(p, "post_filter")]
    if not told:
        return None
    if not all(told):
        return _may_find_victims
    return _MayFindVictims(tuple(told))


class _MayFindVictims:
    """Not every ``no_victims`` says no. An object, not a closure: a run's profile is a deep
    copy of the prototype (``Profile.instantiate``), which rebinds bound methods held in an
    object's fields to the run's plugins but copies no function's closure, so a closure
    would ask the prototype's plugins, whose state no run updates (Tiresias' queues: it
    never said no; SRTF's ranks: its per-cycle scratch would shadow the run's index)."""

    def __init__(self, told: tuple[Callable[[CycleState, Job], bool], ...]) -> None:
        self.told = told

    def __call__(self, state: CycleState, job: Job) -> bool:
        return not all(no_victims(state, job) for no_victims in self.told)


def _may_find_victims(state: CycleState, job: Job) -> bool:
    return True


def _victims_per_queue(profile: Profile, admission: TenantAdmission) -> bool:
    """Whether every PostFilter but the tenant layer's is a wrapped policy's kept per
    cluster queue (``victim_scope``), the tenant layer's Filter (the flavor's nodes) is the
    only one that is not static, and Kueue's admission order walks each queue in its own order
    (a later job of a queue ranks lower in it)."""
    return (admission.config.fair_sharing.admission_order is AdmissionOrder.KUEUE
            and all(p is admission or (isinstance(p, _Stripped)
                                   and getattr(p.inner, "victim_scope", None) is not None)
                for p in profile.post_filters)
            and [f for f in profile.filters if not getattr(f, "static", False)] == [admission])


def _walks_by_groups(profile: Profile, admission: TenantAdmission) -> bool:
    """Whether the cycle may skip groups of alike jobs (``tenancy/groups.py``): a static
    order inside each queue, Kueue's order across queues, and nothing but the tenant layer
    deciding per job (the only PreFilter and failure plugin, besides plugins that say when a
    walk may pass over jobs, ``walk_ready``: backfill; static filters besides its own;
    no PostFilter but its own and the wrapped policy's kept per cluster queue, whose failed
    searches tell about later jobs: ``scoped_victims``)."""
    gated = {id(p) for p in profile.plugins if isinstance(p, _Stripped)
             and getattr(p.inner, "walk_ready", None) is not None}
    return (bool(getattr(admission.inner, "static", False))
            and admission.config.fair_sharing.admission_order is AdmissionOrder.KUEUE
            and _only(profile.pre_filters, admission, gated)
            and (list(profile.post_filters) == [admission] or admission.scoped_victims)
            and _only(profile.blocked, admission, gated) and not profile.acts_on_running
            and all(getattr(f, "static", False) for f in profile.filters if f is not admission))


def _only(plugins: Iterable[Any], admission: TenantAdmission, gated: set[int]) -> bool:
    """The tenant layer first, then only plugins that say when a walk may pass over jobs
    (``walk_ready``: backfill's reservation)."""
    plugins = list(plugins)
    return bool(plugins) and plugins[0] is admission and all(id(p) in gated
                                                             for p in plugins[1:])


def _allocating(profile: Profile, config: TenantConfig) -> Profile:
    """An allocation policy: its ``AllocatePlugin`` behind a ``QuotaGate``; ``TenantAdmission``
    as QueueSort (the cross-queue order the gate charges in, and the pending book of reasons
    and positions that jobs.csv and the API read); the policy's other plugins and its wake-ups
    unchanged (the tenant layer's minimum-runtime and backoff wake-ups do not apply: the
    policy preempts by design every round)."""
    allocator = profile.allocators[0]
    admission = TenantAdmission(config, profile.queue_sort)
    plugins = [QuotaGate(allocator, admission),
               *(p for p in profile.plugins if p is not allocator)]
    wrapped = Profile(f"{profile.name}+tenants", admission, plugins,
                      placement=profile.placement, filters=profile.filters, strict_fifo=False,
                      round_seconds=profile.round_seconds, acts_on_running=profile.acts_on_running,
                      options=dict(profile.options))
    wrapped.wakeups = profile.wakeups
    return wrapped
