"""A round's one-GPU moves applied by the core in two passes (``Scheduler._move_one_gpu``):
every halt, then every launch, as ``_halt`` and ``_launch`` do them one move at a time. Gavel's
agnostic rounds move ~60 jobs a round, ~25,000 a run at 1,000 jobs (issue 13's speed item)."""

from __future__ import annotations

import dataclasses

import pytest

from dlsched.cluster.builtin import resolve_cluster
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.scheduler import Scheduler
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.readers.base import ReaderOptions


def _run(policy: str, batch: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Simulator, dict]:
    calls = {"halt": 0, "batch": 0}
    halt, batch_moves = Scheduler._halt, Scheduler._move_one_gpu

    def counted_halt(self: Scheduler, *args: object) -> None:
        calls["halt"] += 1
        halt(self, *args)  # type: ignore[arg-type]

    def counted_batch(self: Scheduler, *args: object) -> None:
        calls["batch"] += 1
        batch_moves(self, *args)  # type: ignore[arg-type]

    with monkeypatch.context() as patch:
        patch.setattr(Scheduler, "_halt", counted_halt)
        patch.setattr(Scheduler, "_move_one_gpu", counted_batch)
        if not batch:
            patch.setattr(Scheduler, "_two_pass_moves", lambda self: False)
        # Gavel's simulator rounds as gavel-osdi20 sets them (360 s rounds only, no overhead)
        sim = Simulator(resolve_cluster("gavel-108"),
                        resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=60)),
                        build_policy(policy, {"mechanism": "artifact"}),
                        SimConfig(restart_overhead=0.0, round_seconds=360.0, rounds_only=True))
        sim.result = sim.run()  # type: ignore[attr-defined]
    return sim, calls


@pytest.mark.parametrize("policy", ["gavel-maxmin-agnostic", "gavel-las"])
def test_one_gpu_moves_apply_as_each_halt_and_launch(policy: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    batched, calls = _run(policy, True, monkeypatch)
    single, old_calls = _run(policy, False, monkeypatch)
    assert calls["halt"] == 0 and calls["batch"] > 0  # every move through the two passes
    assert old_calls["halt"] > 0 and old_calls["batch"] == 0
    new, old = batched.result, single.result  # type: ignore[attr-defined]
    assert [dataclasses.astuple(r) for r in new.jobs] == [dataclasses.astuple(r)
                                                         for r in old.jobs]
    assert new.type_gpu_seconds == old.type_gpu_seconds
    assert batched.core.segments.columns() == single.core.segments.columns()
    for name in ("free", "node_free", "node_version"):
        assert getattr(batched.core, name).tolist() == getattr(single.core, name).tolist()
    assert batched.core.used_gpus == single.core.used_gpus
    assert batched.core.journal.count - batched.core.journal._base == \
        single.core.journal.count - single.core.journal._base
