"""A policy's own plugins: a Score plugin is used, and a plugin that returns what the core
cannot use is a one-line error naming it (``plugin_checks.py``), not an error deep in the core."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job

from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.cycle import run_cycle
from dlsched.scheduling.framework import SUCCESS
from dlsched.scheduling.plugin_checks import PluginError
from dlsched.scheduling.profile import Profile
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import Job
from dlsched.workload.trace import Trace


class LastNodeFirst:
    """Score: the highest node index wins (the default placement takes the lowest)."""

    name = "last-node-first"
    weight = 10.0

    def __init__(self, scores: Any = None) -> None:
        self.scores = scores

    def score(self, state: Any, job: Job, nodes: np.ndarray, capacity: np.ndarray,
              need: int) -> Any:
        if self.scores is not None:
            return self.scores
        return 100.0 * (nodes + 1) / (nodes.max() + 1)


def _start_nodes(profile: Profile, jobs: int = 1) -> list[int]:
    cluster = make_cluster(nodes=3, gpus=4)
    waiting = [Job(make_job(f"j{i}").at(i).build()) for i in range(jobs)]
    result = run_cycle(profile, cycle_state(cluster, waiting=waiting).snapshot)
    return [int(cluster.gpu_node[start.gpus[0]]) for start in result.starts]


def test_a_policys_score_plugin_decides_placement() -> None:
    assert _start_nodes(Profile("mine", SubmitOrder())) == [0]
    assert _start_nodes(Profile("mine", SubmitOrder(), plugins=(LastNodeFirst(),))) == [2]


@pytest.mark.parametrize("scores", [None, [1.0], "high"], ids=["none", "too-few", "text"])
def test_a_score_plugin_returning_no_score_per_node_is_named(scores: Any) -> None:
    if scores is None:  # ``None`` means "compute" in LastNodeFirst: return None itself
        plugin = LastNodeFirst()
        plugin.score = lambda *args: None  # type: ignore[method-assign]
    else:
        plugin = LastNodeFirst(scores)
    with pytest.raises(PluginError, match=r"Score plugin 'last-node-first' .*one number"):
        _start_nodes(Profile("mine", SubmitOrder(), plugins=(plugin,)))


class MixedKeys:
    """QueueSort: a 1-GPU job's key is its id, a larger job's its submit time (a mistake)."""

    name = "mixed"

    def __init__(self, static: bool = False, reads_state: bool = False,
                 raises: bool = False, typo: bool = False) -> None:
        self.static, self.reads_state, self.raises = static, reads_state, raises
        self.typo = typo

    def sort_key(self, state: Any, job: Job) -> Any:
        if self.typo:
            return job.spec.num_gpu  # type: ignore[attr-defined]  # a typo, not the state
        if self.raises:
            return len(job.spec.num_gpus)  # the plugin's own TypeError
        if self.reads_state:
            return (state.now - job.spec.submit_time, job.job_id)
        return job.job_id if job.spec.num_gpus == 1 else job.spec.submit_time


def _simulate(order: MixedKeys) -> None:
    # Three jobs on one 4-GPU node: B and C wait behind A, so the queue is sorted.
    jobs = [make_job("A").gpus(4).build(), make_job("B").gpus(1).at(1).build(),
            make_job("C").gpus(2).at(2).build()]
    profile = Profile("mine", order)
    Simulator(make_cluster(nodes=1, gpus=4), Trace("t", tuple(jobs)), profile,
              SimConfig(restart_overhead=0.0)).run()


@pytest.mark.parametrize(("order", "message"), [
    (MixedKeys(), r"policy mine: QueueSort 'mixed' \(MixedKeys\): sort_key gave keys that "
                  r"cannot be compared .*: B -> 'B', C -> 2\.0"),
    (MixedKeys(static=True), r"QueueSort 'mixed' \(MixedKeys\): sort_key gave keys that "
                             r"cannot be compared .*: C -> 2\.0, B -> 'B'"),
    (MixedKeys(static=True, reads_state=True),
     r"QueueSort 'mixed' \(MixedKeys\) is static .* sort_key\(None, job\), and it raised "
     r"AttributeError: .*NoneType.* \(for A\); a key that reads the state"),
    # a typo in a static key read as if static were the cause ("needs static = False")
    (MixedKeys(static=True, typo=True),
     r"raised AttributeError: 'JobSpec' object has no attribute 'num_gpu' at "
     r".*test_plugin_checks\.py:\d+ \(for A\); a mistake in sort_key, not in static$"),
], ids=["keys-of-two-types", "static-keys-of-two-types", "static-key-reads-state",
        "static-key-typo"])
def test_a_queue_sort_whose_keys_do_not_order_is_named(order: MixedKeys, message: str) -> None:
    with pytest.raises(PluginError, match=message):
        _simulate(order)


def test_a_queue_sort_that_raises_on_its_own_keeps_its_error() -> None:
    with pytest.raises(TypeError, match="has no len"):
        _simulate(MixedKeys(raises=True))


class Returns:
    """A plugin of every one-job point that returns ``value`` at ``point`` (a mistake) and a
    valid answer at the others."""

    def __init__(self, point: str, value: Any) -> None:
        self.name, self.point, self.value = "mine", point, value

    def pre_filter(self, state: Any, job: Job) -> Any:
        return self.value if self.point == "pre_filter" else SUCCESS

    def filter(self, state: Any, job: Job, mask: np.ndarray) -> Any:
        return self.value if self.point == "filter" else mask

    def permit(self, state: Any, job: Job, gpus: Any) -> Any:
        return self.value if self.point == "permit" else SUCCESS

    def post_filter(self, state: Any, job: Job) -> Any:
        if self.point != "post_filter":
            return []
        return [running.job_id for running in state.snapshot.running]


@pytest.mark.parametrize(("point", "value", "message"), [
    ("pre_filter", True, r"^PreFilter plugin 'mine' \(Returns\): pre_filter\(\) returned bool "
                         r"True, not a Status"),
    ("permit", None, r"^Permit plugin 'mine' \(Returns\): permit\(\) returned NoneType None, "
                     r"not a Status"),
    ("filter", [True], r"^Filter plugin 'mine' \(Returns\): filter\(\) returned list \[True\]; "
                       r"it returns the boolean numpy mask it was given \(1 node\)"),
    ("filter", np.ones(1), r"^Filter plugin 'mine' .* returned ndarray array\(\[1\.\]\)"),
    ("post_filter", None, r"^PostFilter plugin 'mine' \(Returns\): post_filter\(\) nominated "
                          r"str 'A'; it returns running jobs"),
], ids=["pre-filter-bool", "permit-none", "filter-list", "filter-floats", "post-filter-ids"])
def test_a_plugin_returning_the_wrong_kind_of_answer_is_named(point: str, value: Any,
                                                               message: str) -> None:
    # One 4-GPU node: A runs on all of it, B waits; B's attempt calls every point.
    jobs = [make_job("A").gpus(4).work(100).build(), make_job("B").gpus(4).at(1).build()]
    profile = Profile("mine", SubmitOrder(), plugins=(Returns(point, value),))
    with pytest.raises(PluginError, match=message):
        Simulator(make_cluster(nodes=1, gpus=4), Trace("t", tuple(jobs)), profile,
                  SimConfig(restart_overhead=0.0)).run()
