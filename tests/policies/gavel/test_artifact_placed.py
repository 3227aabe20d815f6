"""Gavel's simulator rounds (``mechanism=artifact``) hand the allocation cycle targets it
does not check again (``Targets.placed``): each is a move or a start of the job's own gang
on nodes its static filters allow (GPU-type pins, pools, types rated above 0)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from builders import cluster_of, records_of
from gavel_cases import artifact_sim

from dlsched.cluster.cluster import Node
from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds
from dlsched.scheduling import allocation_cycle
from dlsched.scheduling.allocation import Assignment, Targets
from dlsched.scheduling.state import CycleState
from dlsched.sim.simulator import Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.readers.base import ReaderOptions
from dlsched.workload.trace import Trace

# two nodes of each type, pools a and b on each type
CLUSTER = cluster_of(*(Node(f"{kind}-{i}", kind, 4, pool="ab"[i])
                       for kind in ("K80", "P100", "V100") for i in range(2)))


def pinned_pooled_trace(jobs: int) -> Trace:
    """Gavel's first jobs, every third in pool b, every fourth pinned to P100 and V100."""
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=jobs))
    specs = tuple(replace(spec, pool="b" if i % 3 == 0 else None,
                          gpu_types=("P100", "V100") if i % 4 == 1 else ())
                  for i, spec in enumerate(trace.jobs))
    return replace(trace, jobs=specs)


def simulate(policy: str) -> Simulator:
    sim = artifact_sim(policy, pinned_pooled_trace(40), CLUSTER)
    records_of(sim)
    return sim


@pytest.mark.parametrize("policy", ["gavel-maxmin-agnostic", "gavel-las", "gavel-fifo"])
def test_placed_targets_pass_every_check_they_skip(policy: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    allocate, checked = ArtifactGavelRounds.allocate, []

    def checking(self: ArtifactGavelRounds, state: CycleState) -> Targets:
        targets = allocate(self, state)
        assert type(targets) is Targets and (targets.placed or not targets)
        # the sizes and nodes ``_check`` reads, on the same targets not vouched for
        allocation_cycle._check(self, state, Targets(targets, targets.kept))
        running = list(state.snapshot.running)
        for job in (*running, *state.snapshot.waiting):
            target = targets.get(job.job_id)
            if target is not None:
                assert job not in running or not target.keeps(job, state.cluster)
                assert allocation_cycle._outside(state, job, target) is None
                checked.append(job.job_id)
        return targets

    monkeypatch.setattr(ArtifactGavelRounds, "allocate", checking)
    simulate(policy)
    assert len(checked) > 40  # jobs started, and moved


def test_the_cycle_checks_no_placed_target(monkeypatch: pytest.MonkeyPatch) -> None:
    """A round of Gavel's agnostic max-min moves most running jobs: the cycle asks neither
    ``keeps`` nor the static filters nor the sizes of any (they cost ~10k instructions a
    move); the schedule is the one the checks pass (the test above)."""
    def refuse(*args: object) -> None:
        raise AssertionError("a placed target checked again")

    monkeypatch.setattr(Assignment, "keeps", refuse)
    monkeypatch.setattr(allocation_cycle, "_outside", refuse)
    monkeypatch.setattr(allocation_cycle, "worker_bounds", refuse)
    sim = simulate("gavel-maxmin-agnostic")
    assert all(record.finish_time is not None for record in records_of(sim).values())
