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
from dlsched.workload.job import Job


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
