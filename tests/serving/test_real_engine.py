"""The real engine's batching is the simulator's: driven by a fake model whose calls take the
profile's step times on a fake clock, it gives every request the simulator's first-token and
finish times."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from serving_helpers import flat_profile, trace

from dlsched.perf.inference.curve import Curve
from dlsched.perf.inference.fit import WAKE_AFTER, StepFit
from dlsched.perf.inference.profile import StepProfile
from dlsched.serving.llm_replica import LlmEngineConfig, LlmReplica, RequestLog
from dlsched.serving.real.engine import ContinuousBatcher, LiveRequest
from dlsched.serving.requests import RequestTrace
from dlsched.serving.routing import simulate_requests


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class ProfiledModel:
    """Each call moves the clock by the profile's time for it; tokens are 0."""

    def __init__(self, profile: StepProfile, clock: FakeClock) -> None:
        self.profile, self.clock = profile, clock
        self.calls: list[tuple[str, int]] = []
        self.last_end = 0.0  # when its last call ended (a fitted profile's wake-up)

    def prefill(self, prompts: list[list[int]], slots: list[int], cache: object) -> list[int]:
        tokens = sum(map(len, prompts))
        fit = self.profile.fit
        if fit is not None and self.clock.now - self.last_end >= WAKE_AFTER:
            self.clock.now += fit.wake  # idle long enough: cold caches
        self.clock.now += fit.gap if fit is not None else 0.0  # the engine's own time
        self.clock.now += self.profile.prefill_pack_seconds(list(map(len, prompts)), tokens)
        self.calls.append(("prefill", len(prompts)))
        self.last_end = self.clock.now
        return [0] * len(prompts)

    def decode(self, tokens: list[int], slots: list[int], positions: list[int],
               cache: object) -> list[int]:
        kv = sum(p + 1 for p in positions)
        self.clock.now += self.profile.fit.gap if self.profile.fit is not None else 0.0
        self.clock.now += self.profile.decode_seconds(len(tokens), kv)
        self.calls.append(("decode", len(tokens)))
        self.last_end = self.clock.now
        return [0] * len(tokens)


def run_engine(tr: RequestTrace, profile: StepProfile, blocks: int, config: LlmEngineConfig,
               slots: int = 64) -> tuple[RequestLog, ProfiledModel]:
    clock = FakeClock()
    model = ProfiledModel(profile, clock)
    engine = ContinuousBatcher(model, None, slots, blocks, config, clock)
    log = RequestLog.empty(tr.arrival, tr.prompt, tr.output)
    arrivals = list(enumerate(tr.arrival.tolist()))
    while arrivals or engine.busy:
        if not engine.busy and arrivals[0][1] > clock.now:
            clock.now = arrivals[0][1]  # idle until the next request
        while arrivals and arrivals[0][1] <= clock.now:
            i, at = arrivals.pop(0)
            engine.add(LiveRequest(i, [1] * int(tr.prompt[i]), int(tr.output[i]), at))
        for event in engine.step():
            column = {"first": log.first_token, "done": log.finish}.get(event.kind)
            if column is not None:
                column[event.rid] = event.time
            log.preemptions[event.rid] = event.preemptions
    return log, model


def run_simulator(tr: RequestTrace, profile: StepProfile, blocks: int,
                  config: LlmEngineConfig) -> RequestLog:
    log, _ = simulate_requests(tr, lambda lg, s: LlmReplica(profile, blocks, lg, config, s),
                               [0.0])
    return log


def sloped_profile() -> StepProfile:
    """Prefill grows with tokens; decode with the batch and with KV context."""
    return StepProfile("toy", "cpu", 1, Curve((1.0, 4096.0), (0.002, 0.4), log=True),
                       Curve((1.0, 64.0), (0.01, 0.04)), 1e-5, 100.0)


def fitted_profile(wake: float = 0.004, gap: float = 0.0) -> StepProfile:
    """Step times from a fit: prefill by prompts, tokens and squared lengths, decode lines
    per batch size (1, 8, 64) in KV tokens, a wake-up after idling, a gap between
    iterations."""
    fit = StepFit((0.002, 0.0005, 2e-5, 1e-7), (1, 8, 64),
                  ((0.01, 1e-5), (0.015, 1.2e-5), (0.04, 1.5e-5)), wake, gap)
    return replace(sloped_profile(), fit=fit)


def random_trace(n: int, seed: int, rate: float) -> RequestTrace:
    rng = np.random.default_rng(seed)
    return trace(np.cumsum(rng.exponential(1 / rate, n)).tolist(),
                 rng.integers(1, 200, n).tolist(), rng.integers(2, 40, n).tolist())


@pytest.mark.parametrize(("blocks", "max_batch", "prefill_tokens", "fitted"), [
    (10_000, 256, 8192, False), (10_000, 4, 300, False), (60, 256, 8192, False),
    (60, 256, 8192, True), (10_000, 4, 300, True)],
    ids=["unconstrained", "batch-and-prefill-limits", "kv-cache-preempts",
         "fitted-kv-cache-preempts", "fitted-limits"])
def test_the_engine_schedules_as_the_simulator(blocks: int, max_batch: int,
                                               prefill_tokens: int, fitted: bool) -> None:
    config = LlmEngineConfig(max_batch=max_batch, max_prefill_tokens=prefill_tokens,
                             prefix_cache=False)
    tr = random_trace(80, seed=3, rate=20.0)
    profile = fitted_profile(gap=0.0003) if fitted else sloped_profile()
    real, model = run_engine(tr, profile, blocks, config)
    simulated = run_simulator(tr, profile, blocks, config)
    np.testing.assert_allclose(real.first_token, simulated.first_token, rtol=1e-9)
    np.testing.assert_allclose(real.finish, simulated.finish, rtol=1e-9)
    assert real.preemptions.tolist() == simulated.preemptions.tolist()
    if blocks == 60:
        assert simulated.preemptions.sum() > 0  # the cache limit did act
    if max_batch == 4:
        assert max(b for phase, b in model.calls if phase == "decode") == 4


def test_prefill_first_by_hand() -> None:
    """r0 prefills over [0, 1]; r1 arrives during it and prefills next, [1, 2]; then both
    decode: r1 (2 tokens) is done at 2.1, r0 (3 tokens) at 2.2."""
    real, model = run_engine(trace([0.0, 0.5], [10, 10], [3, 2]), flat_profile(), 10_000,
                             LlmEngineConfig(prefix_cache=False))
    assert real.first_token.tolist() == pytest.approx([1.0, 2.0])
    assert real.finish.tolist() == pytest.approx([2.2, 2.1])
    assert model.calls == [("prefill", 1), ("prefill", 1), ("decode", 2), ("decode", 1)]


def test_a_fitted_profile_by_hand_with_a_wake_up_after_idling() -> None:
    """r0 (prompt 10, 3 tokens) arrives at 1.0 at an idle replica: wake 0.004 + prefill
    0.002 + 0.0005 + 10 x 2e-5 + 100 x 1e-7; then two decode steps of batch 1 at 11 and 12
    KV tokens; each iteration 0.5 ms of the engine's own first. r1 arrives 5 ms after r0
    finished: too soon for a wake-up."""
    profile = fitted_profile(gap=0.0005)
    prefill = 0.0005 + 0.002 + 0.0005 + 10 * 2e-5 + 100 * 1e-7
    first = 1.0 + 0.004 + prefill
    finish = first + (0.0005 + 0.01 + 11e-5) + (0.0005 + 0.01 + 12e-5)
    tr = trace([1.0, finish + 0.005], [10, 10], [3, 2])
    for log in (run_engine(tr, profile, 10_000, LlmEngineConfig(prefix_cache=False))[0],
                run_simulator(tr, profile, 10_000, LlmEngineConfig(prefix_cache=False))):
        assert log.first_token[0] == pytest.approx(first)
        assert log.finish[0] == pytest.approx(finish)
        assert log.first_token[1] == pytest.approx(finish + 0.005 + prefill)


def test_a_prompt_larger_than_the_cache_is_rejected() -> None:
    clock = FakeClock()
    engine = ContinuousBatcher(ProfiledModel(flat_profile(), clock), None, 8, 4,
                               LlmEngineConfig(prefix_cache=False), clock)
    engine.add(LiveRequest(7, [1] * 100, 4, 0.0))  # 7 blocks of 16 > 4
    events = engine.step()
    assert [(e.rid, e.kind) for e in events] == [(7, "rejected")]
    assert not engine.busy


def test_the_rate_for_a_load_level_makes_the_simulated_replicas_that_busy() -> None:
    from dlsched.serving.real.compare import busy_fraction, rate_for_load
    from dlsched.serving.real.replica import ReplicaSettings

    tr = random_trace(60, seed=1, rate=1.0)
    settings = ReplicaSettings(slots=16, kv_blocks=4096)
    profile = sloped_profile()
    for load in (0.3, 0.7):
        rate = rate_for_load(tr, profile, settings, 2, load)
        assert busy_fraction(tr.scaled(rate), profile, settings, 2) == pytest.approx(load,
                                                                                     abs=0.03)
    assert rate_for_load(tr, profile, settings, 2, 0.7) > rate_for_load(tr, profile, settings,
                                                                        2, 0.3)
