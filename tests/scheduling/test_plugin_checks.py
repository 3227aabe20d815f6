"""A policy's own plugins: a Score plugin is used, and a plugin that returns what the core
cannot use is a one-line error naming it (``plugin_checks.py``), not an error deep in the core."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from builders import cycle_state, make_cluster, make_job

from dlsched.policies.fifo import SubmitOrder
from dlsched.scheduling.cycle import run_cycle
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
                 raises: bool = False) -> None:
        self.static, self.reads_state, self.raises = static, reads_state, raises

    def sort_key(self, state: Any, job: Job) -> Any:
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
], ids=["keys-of-two-types", "static-keys-of-two-types", "static-key-reads-state"])
def test_a_queue_sort_whose_keys_do_not_order_is_named(order: MixedKeys, message: str) -> None:
    with pytest.raises(PluginError, match=message):
        _simulate(order)


def test_a_queue_sort_that_raises_on_its_own_keeps_its_error() -> None:
    with pytest.raises(TypeError, match="has no len"):
        _simulate(MixedKeys(raises=True))
