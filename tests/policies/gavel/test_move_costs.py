"""What a Gavel round pays per job it moves (issue 13's speed item): the heterogeneity-agnostic
rounds move ~74% of the running jobs each round (Gavel's own simulator ~81%), so each step the
allocation cycle and the policy take per moved job counts ~25,000 times at 1,000 jobs."""

from __future__ import annotations

import builtins

import pytest
from builders import cycle_state, make_cluster, make_job

from dlsched.scheduling.plugins.filters import allows_every_node
from dlsched.workload.job import Job


@pytest.mark.parametrize("pools", [None, ["a", "b"]], ids=["no-pools", "pools"])
def test_allows_every_node_runs_no_import_statement(pools: list[str] | None,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # A function-level import costs ~35 plain calls even with the module loaded: the cycle
    # asks this for every job a round moves or starts (``allocation_cycle._outside``).
    state = cycle_state(make_cluster(nodes=2, gpus=2, pools=pools))
    job = Job(make_job("j").pool("a").build())
    expected = allows_every_node(state, job)
    imports: list[str] = []
    real = builtins.__import__

    def counting(name: str, *args: object, **kwargs: object) -> object:
        imports.append(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", counting)
    assert allows_every_node(state, job) is expected
    assert imports == []
    assert expected is (pools is None)

