"""The measured step spread (``perf/inference/spread.py``) and its use by the LLM replica."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serving"))
from serving_helpers import flat_profile, trace  # noqa: E402

from dlsched.perf.inference.spread import StepSpread, step_ratios  # noqa: E402
from dlsched.serving.llm_replica import LlmEngineConfig, LlmReplica, RequestLog  # noqa: E402
from dlsched.serving.metrics import per_request  # noqa: E402
from dlsched.serving.routing import simulate_requests  # noqa: E402


def _run(profile, tr):  # noqa: ANN001, ANN202 - test helper
    log, _ = simulate_requests(tr, lambda log, start: LlmReplica(
        profile, 10_000, log, LlmEngineConfig(max_batch=8), start), [0.0])
    return log


def _trace():  # noqa: ANN202
    rng = np.random.default_rng(3)
    n = 200
    return trace(list(np.cumsum(rng.exponential(0.5, n))), list(rng.integers(4, 64, n)),
                 list(rng.integers(2, 40, n)))


def test_a_spread_of_ones_gives_the_model_exactly_and_none_is_today() -> None:
    tr, base = _trace(), flat_profile(0.05, 0.01)
    plain = _run(base, tr)
    ones = _run(replace(base, spread=StepSpread((1.0,), (1.0, 1.0))), tr)
    assert np.array_equal(plain.finish, ones.finish)
    assert np.array_equal(plain.first_token, ones.first_token)


def test_draws_are_seeded_and_follow_the_measured_quantiles() -> None:
    measured = [0.9] * 50 + [1.0] * 30 + [2.0] * 20
    spread = StepSpread.of({"prefill": [1.0], "decode": measured}, seed=7)
    a = spread.sampler(1).decode(20_000)
    assert np.array_equal(a, spread.sampler(1).decode(20_000))  # deterministic per seed/salt
    assert not np.array_equal(a, spread.sampler(2).decode(20_000))  # replicas differ
    for q in (0.25, 0.6, 0.9):
        assert np.quantile(a, q) == pytest.approx(np.quantile(measured, q))
    assert a.mean() == pytest.approx(np.mean(measured), rel=0.02)


def test_slow_and_varied_steps_raise_latency_and_more_at_the_tail() -> None:
    tr, base = _trace(), flat_profile(0.05, 0.01)
    plain = per_request(_run(base, tr))["latency"]
    # mean factor 1.2, but a tenth of the steps 3x: the tail grows more than the median
    spread = StepSpread.of({"prefill": [1.0], "decode": [1.0] * 9 + [3.0]})
    varied = per_request(_run(replace(base, spread=spread), tr))["latency"]
    p50 = np.percentile(varied, 50) / np.percentile(plain, 50)
    p99 = np.percentile(varied, 99) / np.percentile(plain, 99)
    assert p50 > 1.05
    assert p99 > p50


def test_ratios_leave_out_a_prefill_after_idling_and_are_per_replica() -> None:
    its = [
        {"replica": 0, "start": 0.0, "seconds": 0.02, "phase": "prefill", "batch": 1},
        {"replica": 0, "start": 0.02, "seconds": 0.01, "phase": "decode", "batch": 1},
        {"replica": 1, "start": 0.025, "seconds": 0.03, "phase": "prefill", "batch": 1},
        {"replica": 0, "start": 0.03, "seconds": 0.04, "phase": "prefill", "batch": 1},
        {"replica": 1, "start": 1.0, "seconds": 0.05, "phase": "prefill", "batch": 1},
    ]
    ratios = step_ratios(its, lambda it: 0.01, idle_after=0.01)
    # replica 0's first prefill and replica 1's two (the first, then after 0.945 s idle) out
    assert ratios == {"prefill": [pytest.approx(4.0)], "decode": [pytest.approx(1.0)],
                      "decode_batch": [1], "woke": []}
    # with the model's wake-up, the prefills after idling are the woke ratios:
    # seconds / (modelled + wake), in replica order
    woke = step_ratios(its, lambda it: 0.01, idle_after=0.01, wake=0.01)["woke"]
    assert woke == [pytest.approx(1.0), pytest.approx(1.5), pytest.approx(2.5)]


def test_a_spread_needs_both_phases_and_positive_ratios() -> None:
    with pytest.raises(ValueError, match="decode"):
        StepSpread((1.0,), ())
    with pytest.raises(ValueError, match="positive"):
        StepSpread((1.0,), (0.0,))


def test_replicas_of_a_request_log_draw_apart() -> None:
    spread = StepSpread.of({"prefill": [1.0], "decode": [0.5, 1.0, 1.5]}, seed=1)
    profile = replace(flat_profile(0.05, 0.01), spread=spread)
    log = RequestLog.empty(np.zeros(1), np.ones(1, dtype=np.int64), np.ones(1, dtype=np.int64))
    a, b = LlmReplica(profile, 100, log, LlmEngineConfig(), 0.0), LlmReplica(
        profile, 100, log, LlmEngineConfig(), 5.0)
    assert not np.array_equal(a._spread.decode(50), b._spread.decode(50))


def test_blocks_replay_runs_of_the_measured_sequence() -> None:
    # a sequence of long slow and fast runs: independent draws mix them within 20 steps, the
    # stationary bootstrap keeps a window of 20 mostly inside one run
    measured = ([1.0] * 200 + [2.0] * 200) * 10
    runs = StepSpread.of({"prefill": [1.0], "decode": measured}, seed=3, block=100)
    alone = StepSpread.of({"prefill": [1.0], "decode": measured}, seed=3, block=1)
    windows = [runs.sampler(i).decode(20) for i in range(300)]
    mixed = [alone.sampler(i).decode(20) for i in range(300)]
    assert np.mean([w.min() == w.max() for w in windows]) > 0.6
    assert np.mean([w.min() == w.max() for w in mixed]) < 0.01
    # the marginal distribution is kept
    long = runs.sampler(0).decode(200_000)
    assert long.mean() == pytest.approx(1.5, rel=0.03)


def test_blocks_continue_across_calls() -> None:
    spread = StepSpread.of({"prefill": [1.0], "decode": list(np.arange(1.0, 1001.0))},
                           block=1e9)
    sampler = spread.sampler(0)
    a, b = sampler.decode(5), sampler.decode(5)
    assert np.array_equal(np.diff(np.concatenate([a, b])) % 1000, np.ones(9))


def test_the_block_defaults_to_the_correlation_length() -> None:
    rng = np.random.default_rng(0)
    x = np.zeros(20_000)
    for i in range(1, len(x)):  # AR(1) with phi 0.9: e-folding lag ln(1/e)/ln(0.9) ~ 9.5
        x[i] = 0.9 * x[i - 1] + rng.normal(0, 0.1)
    spread = StepSpread.of({"prefill": [1.0], "decode": list(np.exp(x))})
    assert 8 <= spread.block <= 11
    noise = StepSpread.of({"prefill": [1.0], "decode": list(np.exp(rng.normal(0, 0.1, 5000)))})
    assert noise.block == 1


def _spread_profile(seed: int = 0):  # noqa: ANN202 - test helper
    spread = StepSpread.of({"prefill": [0.8, 1.0, 1.6], "decode": [0.7, 1.0, 1.0, 2.5]},
                           seed=seed)
    return replace(flat_profile(0.05, 0.01), spread=spread)


def test_replicas_that_start_together_in_the_comparison_draw_apart() -> None:
    from dlsched.serving.real.compare import simulate
    from dlsched.serving.real.replica import ReplicaSettings

    _, slots = simulate(_trace(), _spread_profile(), ReplicaSettings(), 3)
    draws = [s.replica._spread.decode(40) for s in slots]
    assert all(s.ready == 0.0 for s in slots)
    assert not np.array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[1], draws[2])


def test_pooled_draws_join_runs_with_their_own_seeds() -> None:
    from dlsched.serving.real.compare import simulate, simulate_draws
    from dlsched.serving.real.replica import ReplicaSettings

    tr, settings, profile = _trace(), ReplicaSettings(), _spread_profile(seed=5)
    one = simulate(tr, profile, settings, 2)[0]
    assert np.array_equal(simulate_draws(tr, profile, settings, 2, 1).finish, one.finish)
    pool = simulate_draws(tr, profile, settings, 2, 4)
    assert len(pool.finish) == 4 * len(tr)
    # the first run is the profile's seed, the others the next seeds: each its own draws
    runs = np.split(pool.finish, 4)
    assert np.array_equal(runs[0], one.finish)
    again = simulate(tr, replace(profile, spread=replace(profile.spread, seed=7)),
                     settings, 2)[0]
    assert np.array_equal(runs[2], again.finish)
    assert not np.array_equal(runs[0], runs[1])
    assert np.array_equal(simulate_draws(tr, profile, settings, 2, 4).finish, pool.finish)
    # the pool's p99 lies within the runs' own
    p99s = [np.percentile(per_request(simulate(tr, replace(profile, spread=replace(
        profile.spread, seed=5 + k)), settings, 2)[0])["latency"], 99) for k in range(4)]
    pooled_p99 = np.percentile(per_request(pool)["latency"], 99)
    assert min(p99s) <= pooled_p99 <= max(p99s)


def test_without_a_spread_the_draws_are_one_run() -> None:
    from dlsched.serving.real.compare import simulate, simulate_draws
    from dlsched.serving.real.replica import ReplicaSettings

    tr, settings, profile = _trace(), ReplicaSettings(), flat_profile(0.05, 0.01)
    log = simulate_draws(tr, profile, settings, 2, 10)
    assert len(log.finish) == len(tr)
    assert np.array_equal(log.finish, simulate(tr, profile, settings, 2)[0].finish)


def test_decode_factors_follow_the_batch_class_and_the_residuals_are_drawn() -> None:
    from dlsched.perf.inference.spread import MIN_CLASS_STEPS, batch_class

    assert [batch_class(b) for b in (1, 2, 3, 4, 5, 8, 9, 16, 17)] == [0, 1, 2, 2, 3, 3, 4, 4, 5]
    n = MIN_CLASS_STEPS
    # batch 1 steps run at 0.8 of the model, batch 3-4 at 1.2; a lone batch-8 step (too few
    # for a class of its own) takes the nearest class's factor
    ratios = [0.8] * (2 * n) + [1.2] * (2 * n) + [5.0]
    batches = [1] * (2 * n) + [4] * (2 * n) + [8]
    spread = StepSpread.of({"prefill": [1.0], "decode": ratios, "decode_batch": batches},
                           block=1)
    overall = float(np.median(ratios))
    f1, f2 = 0.8 / overall, 1.2 / overall
    assert spread.batch_factors == (pytest.approx(f1), pytest.approx(f1), pytest.approx(f2),
                                    pytest.approx(f2))
    assert spread.batch_factor(1) == pytest.approx(f1)
    assert spread.batch_factor(64) == pytest.approx(f2)  # beyond the classes: the last
    sampler = spread.sampler(0)
    # the residuals are all ``overall`` but the lone step's: draws at a batch are its
    # class's ratio
    small, large = sampler.decode(5000, 1), sampler.decode(5000, 4)
    assert np.median(small) == pytest.approx(0.8)
    assert np.median(large) == pytest.approx(1.2)
    # without batches: no factors, the ratios drawn as measured
    plain = StepSpread.of({"prefill": [1.0], "decode": ratios}, block=1)
    assert plain.batch_factors == () and plain.batch_factor(4) == 1.0
    assert np.median(plain.sampler(0).decode(5000, 4)) == pytest.approx(overall)


def test_a_replica_draws_its_running_batch_class() -> None:
    n = 40
    spread = StepSpread.of({"prefill": [1.0], "decode": [1.0] * n + [2.0] * n,
                            "decode_batch": [1] * n + [2] * n}, block=1)
    tr = trace([0.0, 0.0], [8, 8], [30, 30])
    base = flat_profile(0.05, 0.01)
    log = _run(replace(base, spread=spread), tr)
    plain = _run(base, tr)
    # both requests decode together at batch 2: every step at twice the model's time
    # (factor 2 / median 1.5, residual 1.5)
    decode = (log.finish - log.first_token)[0]
    assert decode == pytest.approx(2 * (plain.finish - plain.first_token)[0], rel=1e-9)


def test_a_prefill_after_idling_draws_a_woke_ratio_on_model_plus_wake() -> None:
    from dlsched.perf.inference.fit import StepFit

    fit = StepFit((0.01, 0.0, 0.0, 0.0), (1, 2), ((0.001, 0.0), (0.001, 0.0)), wake=0.02)
    profile = replace(flat_profile(0.01, 0.001), fit=fit)
    tr = trace([1.0, 1.001], [8, 8], [1, 1])  # the first finds the replica asleep

    def ttft(spread):  # noqa: ANN001, ANN202
        log = _run(replace(profile, spread=spread), tr)
        return per_request(log)["ttft"]

    woke = StepSpread.of({"prefill": [1.0], "decode": [1.0], "woke": [0.5]})
    plain = StepSpread.of({"prefill": [1.0], "decode": [1.0]})
    # asleep: (prefill + wake) x 0.5; without woke ratios, the wake whole plus the prefill
    assert ttft(woke)[0] == pytest.approx((0.01 + 0.02) * 0.5)
    assert ttft(plain)[0] == pytest.approx(0.01 + 0.02)
    # the second waits behind the first and is not woken: a plain prefill draw
    assert ttft(woke)[1] == pytest.approx((0.01 + 0.02) * 0.5 + 0.01 - 0.001)
    assert woke.sampler(0).woke() == 0.5 and plain.sampler(0).woke() is None
    assert woke.summary()["woke_steps"] == 1 and woke.summary()["woke_p50"] == 0.5
    with pytest.raises(ValueError, match="woke"):
        StepSpread((1.0,), (1.0,), woke=(0.0,))
