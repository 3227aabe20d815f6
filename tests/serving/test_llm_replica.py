"""Continuous batching with a paged KV cache, checked against hand-computed schedules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from serving_helpers import flat_profile, trace

from dlsched.perf.inference.curve import Curve
from dlsched.perf.inference.profile import StepProfile
from dlsched.serving.llm_replica import LlmEngineConfig, LlmReplica, RequestLog
from dlsched.serving.metrics import Slo, meets, per_request, service_metrics
from dlsched.serving.requests import RequestTrace
from dlsched.serving.routing import simulate_requests, simulate_slots

DEFAULT = LlmEngineConfig()


def run(tr: RequestTrace, blocks: int = 10_000, config: LlmEngineConfig = DEFAULT,
        replicas: int = 1) -> tuple[RequestLog, list]:
    p = flat_profile()
    return simulate_requests(tr, lambda log, s: LlmReplica(p, blocks, log, config, s),
                             [0.0] * replicas)


def test_iteration_level_batching_by_hand() -> None:
    """r0 (t=0, 3 tokens) prefills over [0, 1]; r1 (t=0.5, 2 tokens) waits for that iteration
    and prefills over [1, 2] (prompts first, as vLLM); both then decode together: r1's last
    token at 2.1, r0's at 2.2 after one more step alone."""
    log, _ = run(trace([0.0, 0.5], [10, 10], [3, 2]))
    assert log.first_token.tolist() == pytest.approx([1.0, 2.0])
    assert log.finish.tolist() == pytest.approx([2.2, 2.1])
    v = per_request(log)
    assert v["ttft"].tolist() == pytest.approx([1.0, 1.5])
    assert v["tpot"].tolist() == pytest.approx([0.6, 0.1])


def test_a_request_joins_a_running_batch_at_the_next_iteration_boundary() -> None:
    """r0 decodes from t=1 in 0.1 s steps; r1 arrives at 1.25, inside the third step, so its
    prefill starts at 1.3 and r0's remaining tokens resume after it."""
    log, _ = run(trace([0.0, 1.25], [10, 10], [10, 1]))
    assert log.first_token[1] == pytest.approx(2.3)
    assert log.finish[1] == pytest.approx(2.3)  # one token: done at its prefill
    # r0: 9 decode steps, 3 before r1's prefill and 6 after it
    assert log.finish[0] == pytest.approx(2.3 + 0.6)


def test_kv_cache_limit_caps_the_batch() -> None:
    """32-token prompts need 2 blocks; with 6 blocks and a 1-block watermark two fit."""
    tr = trace([0.0] * 4, [32] * 4, [5] * 4)
    _, capped = run(tr, blocks=6)
    _, free = run(tr, blocks=10_000)
    assert capped[0].peak_batch == 2
    assert free[0].peak_batch == 4


def test_a_full_cache_preempts_the_newest_request_which_is_recomputed() -> None:
    tr = trace([0.0, 0.0], [16, 16], [40, 40])
    log, replicas = run(tr, blocks=4)
    assert log.preemptions.tolist() == [0, 1]
    assert not np.isnan(log.finish).any()
    assert log.finish[1] > log.finish[0]


def test_a_prompt_larger_than_the_cache_is_rejected_not_queued_forever() -> None:
    log, replicas = run(trace([0.0, 0.0], [10_000, 10], [2, 2]), blocks=20)
    assert replicas[0].rejected == [0]
    assert math.isnan(log.finish[0]) and not math.isnan(log.finish[1])
    assert not meets(log, Slo(ttft=100.0))[0]


def test_router_sends_simultaneous_requests_to_different_replicas() -> None:
    log, replicas = run(trace([0.0, 0.0], [10, 10], [2, 2]), replicas=2)
    assert log.first_token.tolist() == pytest.approx([1.0, 1.0])
    assert [r.iterations for r in replicas] == [2, 2]


def test_chunked_prefill_splits_a_long_prompt_and_keeps_decoding_by_hand() -> None:
    """Budget 100 tokens per iteration: r1's 250-token prompt (arriving at 1.0) takes three
    hybrid iterations of 99, 99 and 52 tokens, each with r0's decode step (0.1 s + a 1.0 s
    prefill chunk): r1's first token at 4.3; then both decode."""
    tr = trace([0.0, 1.0], [10, 250], [20, 2])
    log, _ = run(tr, config=LlmEngineConfig(chunk_tokens=100))
    assert log.first_token.tolist() == pytest.approx([1.0, 4.3])
    assert log.finish.tolist() == pytest.approx([4.4 + 15 * 0.1, 4.4])
    plain, _ = run(tr)  # r0 stalls for r1's whole prefill instead
    assert plain.first_token[1] == pytest.approx(2.0)
    assert plain.finish[0] == pytest.approx(2.1 + 18 * 0.1)


def test_slo_attainment_counts_each_bound() -> None:
    log, _ = run(trace([0.0, 0.5], [10, 10], [3, 2]))
    assert meets(log, Slo(ttft=1.2)).tolist() == [True, False]
    assert meets(log, Slo(tpot=0.2)).tolist() == [False, True]


def test_prefix_cache_hit_skips_the_shared_prompt_blocks() -> None:
    """Mooncake hashes: r1 starts with r0's two 512-token blocks, so only its last token is
    computed (prefill ~ 1 ms a token here); without the cache it pays the whole prompt."""
    p = StepProfile("toy", "A100-80G", 1, Curve((1.0, 1e6), (0.001, 1000.0)),
                    Curve((1.0, 1e3), (0.1, 0.1)), 0.0, 0.0)
    tr = RequestTrace("mc", np.array([0.0, 10.0]), np.array([1024, 1024]), np.array([1, 1]),
                      ((1, 2), (1, 2)))
    for cache, ttft in ((True, 0.001), (False, 1.024)):
        config = LlmEngineConfig(prefix_cache=cache)
        log, replicas = simulate_requests(
            tr, lambda lg, s, c=config: LlmReplica(p, 10_000, lg, c, s), [0.0])
        assert log.first_token[1] - 10.0 == pytest.approx(ttft)
    assert log.first_token[0] == pytest.approx(1.024)


def test_prefix_aware_routing_sends_a_request_where_its_prefix_is_cached() -> None:
    """r0 (prefix 7) goes to replica 0, r1 (prefix 9) to replica 1; r2 (prefix 9), arriving
    when both are idle, goes to replica 1 for its cached block (plain JSQ would pick 0):
    512 of its 1024 tokens computed."""
    p = StepProfile("toy", "A100-80G", 1, Curve((1.0, 1e6), (0.001, 1000.0)),
                    Curve((1.0, 1e3), (0.1, 0.1)), 0.0, 0.0)
    tr = RequestTrace("mc", np.array([0.0, 0.0, 10.0]), np.array([1024] * 3),
                      np.array([1] * 3), ((7,), (9,), (9,)))
    log, replicas = simulate_requests(
        tr, lambda lg, s: LlmReplica(p, 10_000, lg, DEFAULT, s), [0.0, 0.0])
    assert log.first_token[2] - 10.0 == pytest.approx(0.512)
    assert [r.iterations for r in replicas] == [1, 2]


def test_queueing_delay_and_kv_peak_are_recorded() -> None:
    """r1 (t=0.5) waits for r0's prefill iteration to end at 1.0: 0.5 s of queueing."""
    log, replicas = run(trace([0.0, 0.5], [10, 10], [3, 2]), blocks=100)
    assert log.started.tolist() == pytest.approx([0.0, 1.0])
    m = service_metrics(log, Slo(ttft=5.0), 1.0)
    assert m["queueing_p50"] == pytest.approx(0.25)
    assert replicas[0].peak_blocks == 2  # 12 tokens each: one 16-token block apiece


@pytest.mark.parametrize("chunk", [None, 64], ids=["prefill-first", "chunked"])
def test_a_replica_stopped_amid_a_prefill_gives_no_token(chunk: int | None) -> None:
    """r0 (one token) and r1 prefill together over [0, 1]; the replica stops at 0.5 s: the
    iteration never ends, so neither has a first token and r0 did not finish; both are lost
    and the replica was busy 0.5 s. It finished r0 at 1 s and sent r1's first token then,
    after it was gone."""
    p = flat_profile()
    tr = trace([0.0, 0.0], [10, 10], [1, 5])
    config = LlmEngineConfig(chunk_tokens=chunk)
    log, slots = simulate_slots(tr, lambda log, s: LlmReplica(p, 10_000, log, config, s),
                                [0.0], stops=[0.5])
    assert np.isnan(log.first_token).all() and np.isnan(log.finish).all()
    stopped = slots[0].replica
    assert sorted(stopped.lost) == [0, 1] and stopped.outstanding == 0
    assert stopped.time == pytest.approx(0.5) and stopped.busy_seconds == pytest.approx(0.5)
    assert max(t for t, _, _ in stopped.series) == pytest.approx(0.5)


def test_a_stopped_replica_loses_its_running_and_waiting_requests() -> None:
    """Replica 0 prefills r0 over [0, 1] and decodes it in 0.1 s steps; it is stopped at 1.25
    s, inside the third step: the two steps done by then count (r0 holds 3 tokens of 10), and
    r0 is lost with its first token already sent. r2 (at 2 s) goes to replica 1, idle since
    r1 (one token) finished at 1 s."""
    p = flat_profile()
    tr = trace([0.0, 0.0, 2.0], [10, 10, 10], [10, 1, 1])
    log, slots = simulate_slots(tr, lambda log, s: LlmReplica(p, 10_000, log, DEFAULT, s),
                                [0.0, 0.0], stops=[1.25, None])
    assert math.isnan(log.finish[0]) and log.first_token[0] == pytest.approx(1.0)
    assert log.finish[1] == pytest.approx(1.0) and log.finish[2] == pytest.approx(3.0)
    stopped = slots[0].replica
    assert stopped.lost == [0] and stopped.outstanding == 0
    assert stopped.time == pytest.approx(1.25) and stopped.iterations == 3
    assert not meets(log, Slo(ttft=5.0))[0]
