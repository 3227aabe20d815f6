"""Plugins are checked when a profile is built (issue 11 item 6): a plugin that implements no
extension point, or a method spelt almost like one (``prefilter``), is an error naming the
plugin, not a silently empty extension point."""

from __future__ import annotations

import pytest

from dlsched.policies.fifo import SubmitOrder
from dlsched.runtime.backoff import RetryBackoff
from dlsched.scheduling.framework import SUCCESS, Status
from dlsched.scheduling.hooks import LazyOrder, RankEpoch, optional
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import build_policy, policies
from dlsched.scheduling.state import CycleState
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.job import Job


class Quota:
    name = "quota"

    def prefilter(self, state: CycleState, job: Job) -> Status:  # misspelt pre_filter
        return SUCCESS


class Wakeful:
    name = "wakeful"

    def pre_filter(self, state: CycleState, job: Job) -> Status:
        return SUCCESS

    def next_wakup(self, state: CycleState) -> float | None:  # misspelt next_wakeup
        return None


class Idle:
    name = "idle"

    def helper(self) -> None: ...


class NoOrder:
    name = "no-order"

    def pre_filter(self, state: CycleState, job: Job) -> Status:
        return SUCCESS


@pytest.mark.parametrize(("plugin", "message"), [
    pytest.param(Quota(), "'quota' (Quota) has a method 'prefilter' that is no extension "
                 "point: did you mean 'pre_filter'?", id="prefilter"),
    pytest.param(Wakeful(), "'wakeful' (Wakeful) has a method 'next_wakup' that is no "
                 "extension point: did you mean 'next_wakeup'?", id="beside-a-real-point"),
    pytest.param(Idle(), "'idle' (Idle) implements no extension point", id="no-point"),
])
def test_a_plugin_no_point_knows_is_rejected_by_name(plugin: object, message: str) -> None:
    with pytest.raises(ValueError, match=f"profile p: plugin {message}".replace("?", r"\?")
                       .replace("(", r"\(").replace(")", r"\)")):
        Profile("p", SubmitOrder(), plugins=(plugin,))


def test_a_queue_sort_needs_sort_key() -> None:
    with pytest.raises(ValueError, match=r"queue_sort 'no-order' \(NoOrder\) has no sort_key"):
        Profile("p", NoOrder())


@pytest.mark.parametrize("policy", sorted(policies()))
def test_every_policy_passes_the_check_alone_and_inside_tenants(policy: str) -> None:
    profile = build_policy(policy)
    tenants = parse_tenants("flavors: [{name: f}]\ncluster_queues:\n"
                            "  - {name: q, quotas: {f: {gpu: 8}}}\n")
    with_tenants(Profile(profile.name, profile.queue_sort,
                         plugins=(*profile.plugins, RetryBackoff(1.0, 2.0))), tenants)


def test_optional_hooks_are_found_by_their_protocol() -> None:
    tiresias, fifo = build_policy("tiresias"), build_policy("fifo")
    assert tiresias.rank_epoch is tiresias.queue_sort and optional(fifo.queue_sort,
                                                                   RankEpoch) is None
    assert fifo.lazy_order is None and optional(object(), LazyOrder) is None
