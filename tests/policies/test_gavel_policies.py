"""Round-based Gavel policies (OSDI'20 §5) on the bundled Gavel trace and on hand-checkable
cases: two GPU types with a job type that gains 11.6x on V100 over K80 (ResNet-18, batch 256)
and one that runs faster on K80 (Recommendation, batch 1024: 0.66x)."""

from __future__ import annotations

import numpy as np
import pytest
from builders import cluster_of, records_of

from dlsched.cluster.builtin import resolve_cluster
from dlsched.cluster.cluster import Node
from dlsched.errors import ConfigError
from dlsched.perf.model import Placement
from dlsched.policies.gavel.fairness import fairness_values, max_min_fairness
from dlsched.policies.gavel.inputs import from_rates
from dlsched.policies.gavel_round import GavelRounds
from dlsched.scheduling.registry import build_policy, policies
from dlsched.sim.result import JobRecord
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.job import JobSpec, WorkUnit
from dlsched.workload.readers.base import ReaderOptions
from dlsched.workload.trace import Trace

GAVEL_POLICIES = sorted(name for name in policies() if name.startswith("gavel-"))
FAST = ("ResNet-18", 256)  # 0.89 steps/s on K80, 10.3 on V100
SLOW = ("Recommendation", 1024)  # 20.0 steps/s on K80, 13.3 on V100
TWO_TYPES = cluster_of(Node("k80", "K80", 4), Node("v100", "V100", 4))


def gavel_job(job_id: str, kind: tuple[str, int], work: float, at: float = 0.0) -> JobSpec:
    return JobSpec(job_id, at, 1, work, WorkUnit.ITERATIONS, model=kind[0], batch_size=kind[1])


def simulate(policy: str, cluster, jobs, **options: str) -> tuple[Simulator,
                                                                  dict[str, JobRecord]]:
    sim = Simulator(cluster, Trace("test", tuple(jobs), throughput="gavel"),
                    build_policy(policy, options), SimConfig(restart_overhead=0.0))
    return sim, records_of(sim)


def mean_jct(records: dict[str, JobRecord]) -> float:
    return sum(r.jct for r in records.values()) / len(records)


def test_every_name_is_registered() -> None:
    assert {"gavel-maxmin", "gavel-maxmin-agnostic", "gavel-ftf", "gavel-las", "gavel-makespan",
            "gavel-fifo", "gavel-weighted", "gavel-cost"} <= set(GAVEL_POLICIES)


@pytest.mark.parametrize("policy", GAVEL_POLICIES)
def test_bundled_gavel_trace_completes(policy: str) -> None:
    trace = resolve_trace("gavel-max-min-fairness")
    sim = Simulator(resolve_cluster("gavel-108"), trace, build_policy(policy), SimConfig())
    records = records_of(sim)
    assert len(records) == 96
    assert all(r.status == "finished" for r in records.values())


def test_pop_option_completes() -> None:
    trace = resolve_trace("gavel-max-min-fairness")
    sim = Simulator(resolve_cluster("gavel-108"), trace,
                    build_policy("gavel-maxmin", {"pop_k": "4"}), SimConfig())
    assert all(r.status == "finished" for r in records_of(sim).values())


def hetero_jobs() -> list[JobSpec]:
    # 4 of each kind on 4 K80 + 4 V100, all at time 0: no contention for GPU count, only type.
    # Work: about an hour on the kind's best type.
    return ([gavel_job(f"fast{i}", FAST, 36_000) for i in range(4)]
            + [gavel_job(f"slow{i}", SLOW, 72_000) for i in range(4)])


def test_aware_gives_v100_to_the_job_that_gains_most() -> None:
    sim, records = simulate("gavel-maxmin", TWO_TYPES, hetero_jobs())
    assert all(r.status == "finished" for r in records.values())
    rounds: GavelRounds = sim.profile.queue_sort  # type: ignore[assignment]
    k80, v100 = (TWO_TYPES.type_names.index(t) for t in ("K80", "V100"))
    for i in range(4):
        fast, slow = rounds.seconds_on(f"fast{i}"), rounds.seconds_on(f"slow{i}")
        assert fast[v100] >= 0.8 * fast.sum(), fast
        assert slow[k80] >= 0.8 * slow.sum(), slow


def test_aware_beats_agnostic_on_mean_jct() -> None:
    _, aware = simulate("gavel-maxmin", TWO_TYPES, hetero_jobs())
    _, agnostic = simulate("gavel-maxmin-agnostic", TWO_TYPES, hetero_jobs())
    assert mean_jct(aware) <= mean_jct(agnostic)


def test_jobs_take_turns_in_rounds() -> None:
    # 8 one-GPU jobs on 4 V100s, each about two rounds of work alone (10.3 steps/s * 720 s):
    # at the second round the 4 that waited preempt the 4 that ran.
    cluster = cluster_of(Node("v100", "V100", 4))
    jobs = [gavel_job(f"j{i}", FAST, 7_400) for i in range(8)]
    _, records = simulate("gavel-maxmin", cluster, jobs)
    assert all(r.status == "finished" for r in records.values())
    assert sum(r.preemptions for r in records.values()) > 0
    first_finish = min(r.finish_time for r in records.values())
    assert max(r.first_start for r in records.values()) < first_finish  # all ran before any ended


def test_round_length_is_an_option() -> None:
    profile = build_policy("gavel-ftf", {"round_seconds": "60"})
    assert profile.round_seconds == 60.0 and profile.acts_on_running


def test_unknown_job_type_names_job_and_model() -> None:
    jobs = [JobSpec("mystery", 0.0, 1, 100.0, WorkUnit.ITERATIONS, model="NoSuchNet",
                    batch_size=7)]
    sim = Simulator(TWO_TYPES, Trace("test", tuple(jobs), throughput="gavel"),
                    build_policy("gavel-maxmin"), SimConfig())
    with pytest.raises(ConfigError, match="mystery.*NoSuchNet"):
        sim.run()


def test_cost_prices_need_three_positive_numbers() -> None:
    with pytest.raises(ConfigError, match="prices"):
        build_policy("gavel-cost", {"prices": "1:2"})


@pytest.mark.parametrize("policy", ["gavel-fifo", "gavel-maxmin", "gavel-maxmin-agnostic"])
def test_running_job_migrates_to_the_fast_type_when_it_frees(policy: str) -> None:
    # One K80 and one V100. A (short) and B (long) are both ResNet-18 b256 (0.886 steps/s on
    # K80, 10.30 on V100). At 0 one of them gets the V100 and B ends up on the K80 at least
    # once A holds the V100; A finishes within the first round (3,000 steps < 360 s * 10.3).
    # At the 360 s round Gavel re-assigns every job (§5): B moves to the V100 (a resize, not a
    # preemption). Without migration B would stay on the K80 for ~11 hours.
    cluster = cluster_of(Node("k80", "K80", 1), Node("v100", "V100", 1))
    jobs = [gavel_job("A", FAST, 3_000), gavel_job("B", FAST, 36_000)]
    sim, records = simulate(policy, cluster, jobs)
    b = records["B"]
    assert b.status == "finished"
    k80, v100 = 0.8855799947494726, 10.300256501360458
    latest = 720 + 36_000 / v100  # moved by the second round at the latest
    assert b.finish_time <= latest, b.finish_time
    assert b.finish_time < 36_000 / k80 / 5
    assert b.resizes + b.preemptions >= 1


def test_fifo_migration_golden() -> None:
    # gavel-fifo: A (first by id) gets the V100, B the K80. A ends at 3000 / 10.30 = 291 s;
    # B moves at the 360 s round with 360 * 0.886 = 318.8 steps done:
    # finish = 360 + (36000 - 318.8) / 10.30 = 3824.1 s, one resize, no preemption.
    cluster = cluster_of(Node("k80", "K80", 1), Node("v100", "V100", 1))
    _, records = simulate("gavel-fifo", cluster,
                          [gavel_job("A", FAST, 3_000), gavel_job("B", FAST, 36_000)])
    k80, v100 = 0.8855799947494726, 10.300256501360458
    assert records["A"].finish_time == pytest.approx(3_000 / v100)
    assert records["B"].finish_time == pytest.approx(360 + (36_000 - 360 * k80) / v100)
    assert (records["B"].resizes, records["B"].preemptions) == (1, 0)


class _PerTypeRates:
    """A throughput model other than Gavel's tables: work units/s by (model, GPU type)."""

    RATES = {"v100-only": {"K80": 0.0, "V100": 2.0}, "k80-only": {"K80": 1.0, "V100": 0.0},
             "either": {"K80": 1.0, "V100": 1.5}}

    def __init__(self, t4: float = 0.0) -> None:
        self.t4 = t4

    def rate(self, spec: JobSpec, placement: Placement) -> float:
        kind = placement.gpu_types[0]
        return self.t4 if kind in ("T4", "MI250") else self.RATES[spec.model][kind]


def test_rates_from_any_model_make_gavels_lp() -> None:
    # T = [[0, 2], [1, 1.5]] on 1 K80 + 1 V100. Equal-share normalizers (mean rate over the
    # cluster's GPUs, times the same share f): a 1.0 f, b 1.25 f. With u = b's V100 time, a gets
    # the V100 the rest (1 - u) and b the K80 (1 - u) (each job's time adds up to at most 1):
    # a = 2(1 - u) / 1, b = ((1 - u) + 1.5u) / 1.25; max-min equalizes them: u = 0.5, both 1/f.
    jobs = (JobSpec("a", 0.0, 1, 7_200.0, model="v100-only"),
            JobSpec("b", 0.0, 1, 3_600.0, model="either"))
    problem = from_rates(jobs, {"K80": 1, "V100": 1}, np.array([[0.0, 2.0], [1.0, 1.5]]),
                         remaining=[7_200.0, 3_600.0], elapsed=[0.0, 0.0], attained=[0.0, 0.0])
    allocation = max_min_fairness(problem)
    assert allocation.x.ravel().tolist() == pytest.approx([0.0, 0.5, 0.5, 0.5], abs=1e-6)
    assert fairness_values(problem, allocation).tolist() == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("with_b", [False, True])
def test_any_throughput_model_gives_gavel_its_rates_per_type(with_b: bool) -> None:
    # 1 K80 + 1 V100 under a model that is not Gavel's table: "a" runs only on the V100 and "c"
    # only on the K80, so alone they run from t = 0 to 3,600 s; "b" (either type) arriving at
    # 100 s may share their GPUs, but "a" never gets K80 time nor "c" V100 time (rate 0 in T).
    cluster = cluster_of(Node("k80", "K80", 1), Node("v100", "V100", 1))
    jobs = (JobSpec("a", 0.0, 1, 7_200.0, model="v100-only"),
            JobSpec("c", 0.0, 1, 3_600.0, model="k80-only"),
            *((JobSpec("b", 100.0, 1, 3_600.0, model="either"),) if with_b else ()))
    profile = build_policy("gavel-maxmin")
    sim = Simulator(cluster, Trace("t", jobs), profile, SimConfig(restart_overhead=0.0),
                    throughput=_PerTypeRates())
    records = records_of(sim)
    assert all(r.status == "finished" for r in records.values())
    rounds = next(p for p in sim.profile.allocators if isinstance(p, GavelRounds))
    assert rounds.seconds_on("a")[0] == 0.0 and rounds.seconds_on("c")[1] == 0.0
    if not with_b:
        assert records["a"].finish_time == pytest.approx(3_600.0)  # 7,200 units at 2/s
        assert records["c"].finish_time == pytest.approx(3_600.0)
    else:
        assert records["a"].finish_time > 3_600.0  # it shared the V100 with b


def test_space_sharing_needs_gavel_pair_measurements() -> None:
    jobs = (JobSpec("b", 0.0, 1, 100.0, model="either"),)
    sim = Simulator(TWO_TYPES, Trace("t", jobs), build_policy("gavel-maxmin-packed"),
                    SimConfig(), throughput=_PerTypeRates())
    with pytest.raises(ConfigError, match="co-location"):
        sim.run()


def test_cost_prices_for_any_gpu_type() -> None:
    jobs = (JobSpec("b", 0.0, 1, 100.0, model="either"),)
    sim = Simulator(TWO_TYPES, Trace("t", jobs), build_policy(
        "gavel-cost", {"type_prices": "K80=0.5, V100=2"}), SimConfig(),
        throughput=_PerTypeRates())
    assert all(r.status == "finished" for r in records_of(sim).values())
    t4 = cluster_of(Node("t", "T4", 1))  # T4 has a default price
    sim = Simulator(t4, Trace("t", jobs), build_policy("gavel-cost"), SimConfig(),
                    throughput=_PerTypeRates(t4=1.0))
    assert all(r.status == "finished" for r in records_of(sim).values())
    mi = cluster_of(Node("m", "MI250", 1))
    sim = Simulator(mi, Trace("t", jobs), build_policy("gavel-cost"), SimConfig(),
                    throughput=_PerTypeRates(t4=1.0))
    with pytest.raises(ConfigError, match="no price for GPU type 'MI250'.*type_prices=MI250="):
        sim.run()
    with pytest.raises(ConfigError, match="NAME=PRICE"):
        build_policy("gavel-cost", {"type_prices": "T4=free"})


def test_a_stalled_warm_start_is_solved_again_from_scratch() -> None:
    # On ElasticFlow's 195 jobs squeezed onto 16 GPUs, FTF's Pareto re-solve at t = 52,105 s
    # stalls from the previous basis (HiGHS: "Unknown"); a cold interior-point solve succeeds.
    cluster = resolve_cluster("small-16")
    trace = resolve_trace("elasticflow-195", None, ReaderOptions(max_gpus=cluster.num_gpus))
    sim = Simulator(cluster, trace, build_policy("gavel-ftf"), SimConfig(max_time=53_000))
    result = sim.run()
    assert sum(j.status == "finished" for j in result.jobs) > 0


@pytest.mark.parametrize("mechanism", ["paper", "artifact"])
def test_a_node_without_gpus_is_no_room(mechanism: str) -> None:
    # A CPU-only node (GPU type code -1, as alibaba-2023 has hundreds) beside the GPU nodes:
    # the round's room per type counted it as an index and the run stopped with numpy's error.
    cluster = cluster_of(Node("cpu", "", 0), Node("k80", "K80", 4), Node("v100", "V100", 4))
    jobs = [gavel_job(f"j{i}", FAST if i % 2 else SLOW, 2000.0, at=10.0 * i) for i in range(8)]
    _, records = simulate("gavel-fifo", cluster, jobs, mechanism=mechanism)
    assert all(r.status == "finished" for r in records.values())


@pytest.mark.parametrize("policy", ["gavel-fifo", "gavel-maxmin", "gavel-las",
                                    "gavel-maxmin-agnostic"])
@pytest.mark.parametrize("throughput", ["gavel", "linear"])
def test_a_job_pinned_to_a_gpu_type_runs_only_there(policy: str, throughput: str) -> None:
    # ResNet-18 gains 11.6x on V100: pinned to K80 (a trace's gres type, a MIG job's types),
    # Gavel used to move it to the V100s anyway.
    jobs = [JobSpec(f"j{i}", 0, 1, 3_000, WorkUnit.ITERATIONS, model=FAST[0],
                    batch_size=FAST[1], gpu_types=("K80",)) for i in range(2)]
    sim = Simulator(TWO_TYPES, Trace("test", tuple(jobs), throughput=throughput),
                    build_policy(policy), SimConfig(restart_overhead=0.0))
    records = records_of(sim)
    assert {r.status for r in records.values()} == {"finished"}
    assert {g for s in sim.core.segments.all() for g in s.gpus} <= {0, 1, 2, 3}


@pytest.mark.parametrize(("policy", "reads"), [("gavel-ftf", True), ("gavel-fifo", False),
                                               ("gavel-maxmin", False), ("gavel-las", False)])
def test_only_an_objective_that_reads_isolated_time_keeps_its_books(
        policy: str, reads: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    # FTF's t_isolated (``_with_isolated_time``) is kept at each solve only for an objective
    # that may read it; the others solve the same problem without it.
    calls: list[int] = []
    kept = GavelRounds._with_isolated_time

    def counted(self, problem):  # type: ignore[no-untyped-def]
        calls.append(problem.n_jobs)
        return kept(self, problem)

    monkeypatch.setattr(GavelRounds, "_with_isolated_time", counted)
    trace = resolve_trace("gavel-continuous-1000", options=ReaderOptions(limit=12))
    Simulator(resolve_cluster("gavel-108"), trace, build_policy(policy, {}),
              SimConfig(restart_overhead=0.0, round_seconds=360.0)).run()
    assert bool(calls) is reads
