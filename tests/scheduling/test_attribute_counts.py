"""The objects a contended Tiresias run reads most keep CPython 3.11's fast attribute path.

An instance keeps its attributes as shared-key values for up to 29 names; with more, every
attribute read, write and method call of it takes a slower, unspecialized path (issue 14:
the lane's walk with 32 attributes cost ~13k instructions more a cycle, ~2.4%). The core has
more: they are its slots.
"""

from __future__ import annotations

import dis
import sys

from builders import make_cluster, make_job, simulator

from dlsched.scheduling import preempt_lane

FAST_ATTRIBUTES = 29


def test_a_contended_runs_core_lane_and_tiresias_keep_to_the_fast_attribute_path() -> None:
    specs = [make_job(f"j{i:03d}").at(i * 13).gpus((1, 2, 4, 1, 8, 3)[i % 6]).work(
        300 + 47 * (i % 9)).build() for i in range(60)]
    sim = simulator("tiresias", make_cluster(nodes=3, gpus=8), specs,
                    options={"thresholds": "100:1500", "promote_knob": "2"},
                    restart_overhead=5.0)
    sim.run()
    core = sim.core
    assert not core.__dict__  # every attribute the core sets is one of its slots
    lane = preempt_lane.lane_of(core.profile)
    assert lane is not None and lane._walk is not None
    for hot in (core.profile.queue_sort, lane._walk, lane, sim, core.waiting):
        assert len(vars(hot)) <= FAST_ATTRIBUTES, type(hot).__name__
    if sys.version_info[:2] == (3, 11):  # the bound kept to: CPython 3.11's
        assert "LOAD_ATTR_INSTANCE_VALUE" in _read_of(FAST_ATTRIBUTES)
        assert "LOAD_ATTR_INSTANCE_VALUE" not in _read_of(FAST_ATTRIBUTES + 1)


def _read_of(count: int) -> set[str]:
    """The instructions an attribute read of an instance with ``count`` attributes is
    specialized into (inline values up to 29 attributes)."""
    source = "class C:\n    def __init__(self):\n" + "".join(
        f"        self.a{i} = {i}\n" for i in range(count)) + (
        "    def read(self):\n        return self.a1\n")
    scope: dict = {}
    exec(source, scope)  # noqa: S102 (our own text)
    instance = scope["C"]()
    for _ in range(64):  # the interpreter specializes an instruction after a few runs
        instance.read()
    return {i.opname for i in dis.get_instructions(scope["C"].read, adaptive=True)}
