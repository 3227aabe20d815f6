"""Gavel's rounds as its own simulator runs them (``mechanism=artifact``, setting gavel-osdi20)."""

from __future__ import annotations

import pytest
from builders import records_of
from gavel_cases import artifact_sim

from dlsched.cluster.builtin import resolve_cluster
from dlsched.errors import ConfigError
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.readers.base import ReaderOptions


def first_starts(policy: str, jobs: int, **options: str) -> dict[int, float]:
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=jobs))
    sim = Simulator(resolve_cluster("gavel-108"), trace, build_policy(policy, options),
                    SimConfig(restart_overhead=0.0, round_seconds=360.0, rounds_only=True))
    return {int(job_id.rsplit("-", 1)[1]): record.first_start
            for job_id, record in records_of(sim).items()}


@pytest.mark.parametrize("policy", ["gavel-maxmin", "gavel-fifo", "gavel-maxmin-agnostic"])
def test_a_job_waits_for_the_first_allocation_reset_after_it_arrives(policy: str) -> None:
    # Arrivals 0, 17, 242, 416, ..., 1150 s. Gavel resets at t=0 and, its last reset still
    # being at 0, at the 360 s round; the next reset needs 1,920 s more: the 2,520 s round.
    starts = first_starts(policy, 12, mechanism="artifact")
    assert starts[0] == 0.0
    assert starts[1] == starts[2] == 360.0
    assert all(starts[j] == 2520.0 for j in range(3, 12))


def test_the_paper_mechanism_starts_a_job_at_the_next_round() -> None:
    starts = first_starts("gavel-maxmin", 12)
    assert starts[3] == 720.0  # arrived at 416 s


def test_unknown_mechanism_is_refused() -> None:
    with pytest.raises(ConfigError, match="mechanism"):
        build_policy("gavel-maxmin", {"mechanism": "nope"})


@pytest.mark.parametrize("policy", ["gavel-fifo", "gavel-maxmin-agnostic"])
def test_the_direct_walk_picks_what_assign_types_picks_over_the_entries(
        policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # ``_walk`` replaces sorting ``_entries`` (priorities = walk positions) in
    # ``assign_types``: each round of a run, both give the same types in the same order.
    from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds
    from dlsched.policies.gavel.assign import assign_types

    walk, rounds = ArtifactGavelRounds._walk, []

    def checked(self, view, jobs, workers, free):  # type: ignore[no-untyped-def]
        order = self._type_order(view)  # one draw of the (random) type order for both
        with monkeypatch.context() as patch:
            patch.setattr(self, "_type_order", lambda _view: order)
            direct = walk(self, view, jobs, workers, free)
            sorted_entries = assign_types(self._entries(view, jobs), workers, free)
        assert list(direct.items()) == list(sorted_entries.items())
        rounds.append(len(direct))
        return direct

    monkeypatch.setattr(ArtifactGavelRounds, "_walk", checked)
    # every round walked (none told by ``artifact_settled``)
    monkeypatch.setattr(ArtifactGavelRounds, "_settled", lambda *_args: False)
    first_starts(policy, 60, mechanism="artifact")
    assert len(rounds) > 20 and max(rounds) > 0


def test_each_job_s_speeds_are_computed_once_and_kept_in_its_book_row(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``_speed_rows`` runs on the jobs that arrived, not on every job each round; the rows
    # the rounds read are the speeds it gave (relative: each over the job's fastest type).
    import numpy as np

    from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds
    from dlsched.policies.gavel_round import GavelRounds

    asked: list[str] = []
    speed = GavelRounds._speed_rows

    def counted(self, state, jobs):  # type: ignore[no-untyped-def]
        asked.extend(job.job_id for job in jobs)
        return speed(self, state, jobs)

    monkeypatch.setattr(GavelRounds, "_speed_rows", counted)
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=40))
    profile = build_policy("gavel-fifo", {"mechanism": "artifact"})
    sim = Simulator(resolve_cluster("gavel-108"), trace, profile,
                    SimConfig(restart_overhead=0.0, round_seconds=360.0, rounds_only=True))
    sim.run()
    rounds = sim.core.profile.allocators[0]
    assert isinstance(rounds, ArtifactGavelRounds)
    assert sorted(asked) == sorted(set(asked)) and len(asked) == 40
    for job_id, rate in rounds._rates.items():
        on = rounds.seconds_on(job_id)
        assert on.shape == (3,) and on.sum() > 0 and rate.max() > 0
    book = rounds._book
    assert book is not None and not book.slot  # every job finished: no rows tracked
    used = book.speed.max(axis=1) > 0  # rows are reused after a job leaves
    assert used.any() and np.allclose(book.relative[used].max(axis=1), 1.0)


@pytest.mark.parametrize("policy", ["gavel-fifo", "gavel-maxmin-agnostic"])
def test_kept_jobs_and_journal_kept_nodes_match_a_full_rebuild(
        policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each round names only the jobs that move or start (``Targets``); the jobs it keeps
    # would keep their GPUs under a full target, and the nodes it keeps per running job from
    # the core's journal are those every running job holds.
    from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds
    from dlsched.scheduling.allocation import Assignment, Targets

    allocate, seen = ArtifactGavelRounds.allocate, []

    def checked(self, state):  # type: ignore[no-untyped-def]
        targets = allocate(self, state)
        running, cluster = state.snapshot.running, state.cluster
        assert isinstance(targets, Targets) and not targets.kept & targets.keys()
        assert self._current == {job.job_id: Assignment.of(job, cluster).nodes
                                 for job in running}
        for job in running:
            if job.job_id in targets.kept:
                assert Assignment(self._current[job.job_id]).keeps(job, cluster)
        seen.append(len(targets.kept))
        return targets

    monkeypatch.setattr(ArtifactGavelRounds, "allocate", checked)
    first_starts(policy, 60, mechanism="artifact")
    assert len(seen) > 20 and max(seen) > 5


def test_fifo_rounds_that_keep_every_job_are_told_without_the_walk(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``artifact_settled``: a FIFO round whose running jobs are its solved jobs, each on its
    # one type, is answered without priorities, lists, walk or placement; each such answer is
    # the full round's (run here too), and most rounds between resets are such rounds.
    from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds

    settled, walk, told, walked = ArtifactGavelRounds._settled, ArtifactGavelRounds._walk, [], []
    is_round, states = ArtifactGavelRounds._is_round, []

    def noted(self, state):  # type: ignore[no-untyped-def]
        states.append(state)
        return is_round(self, state)

    def checked(self, current, down, cluster):  # type: ignore[no-untyped-def]
        answer = settled(self, current, down, cluster)
        if answer:
            view = self._ranked(states[-1], True)
            workers = self._workers
            room, free = self._free_room(cluster, down)
            types = walk(self, view, [None] * len(self._rows.ids), workers, free)
            assert types == {job_id: self._single[job_id] for job_id in types}
            assert set(types) == set(current)
            told.append(len(current))
        return answer

    def counted(self, view, jobs, workers, free):  # type: ignore[no-untyped-def]
        walked.append(len(jobs))
        return walk(self, view, jobs, workers, free)

    monkeypatch.setattr(ArtifactGavelRounds, "_settled", checked)
    monkeypatch.setattr(ArtifactGavelRounds, "_walk", counted)
    monkeypatch.setattr(ArtifactGavelRounds, "_is_round", noted)
    first_starts("gavel-fifo", 60, mechanism="artifact")
    assert len(told) > 2 * len(walked) and max(told) > 5


def test_credits_reuse_the_running_columns_while_only_stopped_jobs_changed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``Credits`` keeps the running jobs' columns across cycles while the core's journal
    # tells that only jobs that stopped running changed: most FIFO rounds; the seconds per
    # job and type, and the schedule, are those of reading every job again each cycle.
    from dlsched.policies.gavel.artifact_book import _Running

    def run() -> tuple[dict[str, object], dict[str, list[float]], int, int]:
        trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=60))
        sim = artifact_sim("gavel-fifo", trace)
        records = records_of(sim)
        rounds = sim.core.profile.allocators[0]
        seconds = {job_id: rounds.seconds_on(job_id).tolist() for job_id in records}
        return records, seconds, rounds._credits.reused, sim.core.cycles

    records, seconds, reused, cycles = run()
    monkeypatch.setattr(_Running, "after", lambda *_args: None)
    assert run() == (records, seconds, 0, cycles)
    assert reused > cycles // 2


def test_a_round_told_settled_sorts_only_the_jobs_that_arrived(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The rows' arrival order is sorted when a walk needs it (or a solve); a settled FIFO
    # round tracks the arrivals alone: few jobs keyed for a sort beside the cycles' jobs.
    import dlsched.policies.gavel.artifact_rounds as rounds

    keyed, arrival, active = [], rounds._ARRIVAL, []
    monkeypatch.setattr(rounds, "_ARRIVAL", lambda job: keyed.append(1) or arrival(job))
    settled = rounds.ArtifactGavelRounds._settled

    def counted(self, current, down, cluster):  # type: ignore[no-untyped-def]
        active.append(len(self._known))
        return settled(self, current, down, cluster)

    monkeypatch.setattr(rounds.ArtifactGavelRounds, "_settled", counted)
    first_starts("gavel-fifo", 60, mechanism="artifact")
    assert 60 <= len(keyed) < sum(active) // 2


@pytest.mark.parametrize(("policy", "most"), [
    ("gavel-fifo", True), ("gavel-maxmin", True), ("gavel-las", True),
    ("gavel-maxmin-agnostic", True),
])
def test_credit_columns_are_kept_across_rounds_that_move_jobs(
        policy: str, most: bool) -> None:
    # The columns are kept from credit to credit, those of the jobs that started or moved
    # read again (``_Running._patched``): most max-min and LAS credits too (none before
    # session 30), and since session 32 the agnostic rounds', which move most running jobs
    # (read anew before: patching them costs fewer instructions).
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=30))
    sim = artifact_sim(policy, trace)
    result = sim.run()
    credits = sim.core.profile.allocators[0]._credits
    assert (credits.reused >= 0.8 * result.cycles) == most
    assert credits.reused >= 0.25 * result.cycles


def test_relative_speeds_are_computed_once_per_kind_of_job() -> None:
    # Arrivals write their book rows one job at a time from the per-kind speed rows
    # (``_speed_rows``), each row's ratios to its fastest type computed once per kind.
    import numpy as np

    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=80))
    sim = artifact_sim("gavel-fifo", trace)
    sim.run()
    rounds = sim.core.profile.allocators[0]
    kinds = {(spec.model, spec.batch_size, spec.num_gpus) for spec in trace.jobs}
    assert len(rounds._relatives) == len(kinds) < len(trace.jobs)
    for speed, relative in rounds._relatives.values():
        assert relative.tolist() == (speed / speed.max()).tolist()
        assert np.all(relative <= 1.0)


def test_settled_rounds_compare_held_types_kept_as_jobs_move(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``_settled`` compares ``_single`` with each running job's ``held_type``, kept as the
    # core's journal names jobs: the answer of ``keeps_all`` over every running job, while
    # ``held_type`` runs on a few jobs a round, not on every running job each round.
    from dlsched.policies.gavel import artifact_rounds, artifact_settled
    from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds

    tested, answers = [], []
    held_type, settled = artifact_settled.held_type, ArtifactGavelRounds._settled

    def counted(*args):  # type: ignore[no-untyped-def]
        tested.append(1)
        return held_type(*args)

    def checked(self, current, down, cluster):  # type: ignore[no-untyped-def]
        answer = settled(self, current, down, cluster)
        full = self._single is not None and not down and artifact_settled.keeps_all(
            self._single, current, self._workers, cluster.node_type.tolist())
        answers.append((answer, full, len(current)))
        return answer

    monkeypatch.setattr(artifact_rounds, "held_type", counted)
    monkeypatch.setattr(ArtifactGavelRounds, "_settled", checked)
    first_starts("gavel-fifo", 200, mechanism="artifact")
    assert all(answer == full for answer, full, _ in answers)
    assert sum(answer for answer, _, _ in answers) > len(answers) // 2
    assert len(tested) < sum(running for _, _, running in answers) // 4


@pytest.mark.parametrize(("policy", "most"), [("gavel-fifo", 0.8), ("gavel-maxmin", 0.0)])
def test_arrivals_and_departures_are_told_by_the_waiting_jobs_and_the_journal(
        monkeypatch: pytest.MonkeyPatch, policy: str, most: float) -> None:
    # ``_arrivals`` reads the waiting jobs and the jobs the core's journal names, not every
    # job each cycle: the active set it gives is the one read from every job. Most FIFO
    # cycles are told so; max-min rounds move many jobs (then every job is read).
    from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds

    told, arrivals = [], ArtifactGavelRounds._arrivals

    def checked(self, snapshot):  # type: ignore[no-untyped-def]
        known, answer = self._known, arrivals(self, snapshot)
        if answer is not None:
            came, left = answer
            every = frozenset(job.job_id for job in (*snapshot.running, *snapshot.waiting))
            assert (known - left) | {job.job_id for job in came} == every
            assert left <= known and not {job.job_id for job in came} & known
        told.append(answer is not None)
        return answer

    monkeypatch.setattr(ArtifactGavelRounds, "_arrivals", checked)
    first_starts(policy, 150, mechanism="artifact")
    assert sum(told) > most * len(told)


@pytest.mark.parametrize("policy", ["gavel-maxmin", "gavel-maxmin-agnostic"])
def test_round_targets_are_built_without_the_assignment_checks(
        policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A moved job's ``Assignment`` is built without ``__post_init__`` (``place_round``'s
    # nodes are sorted): each target equals the checked one, and no check ran in ``allocate``.
    from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds
    from dlsched.scheduling.allocation import Assignment

    checks, targets, allocate = [], [], ArtifactGavelRounds.allocate
    post_init = Assignment.__post_init__

    def counted(self):  # type: ignore[no-untyped-def]
        checks.append(1)
        post_init(self)

    def allocated(self, state):  # type: ignore[no-untyped-def]
        with monkeypatch.context() as patch:
            patch.setattr(Assignment, "__post_init__", counted)
            answer = allocate(self, state)
        targets.extend(answer.values())
        return answer

    monkeypatch.setattr(ArtifactGavelRounds, "allocate", allocated)
    first_starts(policy, 60, mechanism="artifact")
    assert len(targets) > 50 and not checks
    assert all(target == Assignment(target.nodes) for target in targets)


def test_fifo_resets_run_fifo_s_greedy_without_building_the_problem(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # ``_fifo_solve``: each FIFO reset gives the book the X ``fifo_hetero`` gives over the
    # problem the reset used to build (checked here at every reset), and builds none itself.
    import numpy as np

    from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds
    from dlsched.policies.gavel.artifact_settled import single_types
    from dlsched.policies.gavel.efficiency import fifo_hetero
    from dlsched.policies.gavel_round import GavelRounds

    problem, solve, built, checked = GavelRounds._problem, ArtifactGavelRounds._fifo_solve, \
        [], []

    def counted(self, state, jobs):  # type: ignore[no-untyped-def]
        built.append(len(jobs))
        return problem(self, state, jobs)

    def compared(self, state, jobs):  # type: ignore[no-untyped-def]
        answer = solve(self, state, jobs)
        assert answer
        full = problem(self, state, jobs)
        x = fifo_hetero(full).x
        at = [self._book.slot[job.job_id] for job in jobs]
        assert np.array_equal(self._book.x[at], x)
        assert self._solved == frozenset(full.job_ids)
        assert self._single == single_types(full.job_ids, x, self._book.speed[at])
        checked.append(int(x.sum()))
        return answer

    monkeypatch.setattr(GavelRounds, "_problem", counted)
    monkeypatch.setattr(ArtifactGavelRounds, "_fifo_solve", compared)
    first_starts("gavel-fifo", 60, mechanism="artifact")
    assert len(checked) > 3 and max(checked) > 5 and built == []
