"""A job no node can ever host fails at submission naming the filter that removed the last
node; where other filters narrowed the nodes first, the reason says how many each left. A job
pinned to V100 in pool a, whose only node is an A100, read "[node-pool] no node passes this
filter", as if pool a had no node."""

from __future__ import annotations

import pytest
from builders import cluster_of, make_job, simulator

from dlsched.cluster.cluster import Node

CLUSTER = (Node("a0", "A100", 4, pool="a"), Node("v0", "V100", 4, pool="b"),
           Node("v1", "V100", 4, pool="b"))


@pytest.mark.parametrize(("types", "pool", "why"), [
    pytest.param(("V100",), "a", "([node-pool] no node passes this filter; of 3 nodes, "
                 "gpu-type leaves 2, node-pool leaves 0)", id="type-then-pool"),
    pytest.param(("H100",), "a", "([gpu-type] no node passes this filter)",
                 id="one-filter-says-it-alone"),
])
def test_the_reason_names_each_filter_that_narrowed_the_nodes(types: tuple[str, ...],
                                                               pool: str, why: str) -> None:
    job = make_job("pinned").types(*types).pool(pool).build()
    (record,) = simulator("sjf", cluster_of(*CLUSTER), [job]).run().jobs
    assert record.status == "failed"
    assert record.pending_reason == ("can never run: needs 1 GPU, the nodes it may use have 0 "
                                     + why)
