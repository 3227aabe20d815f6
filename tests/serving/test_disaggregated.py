"""Prefill/decode disaggregation by hand (Splitwise / DistServe)."""

from __future__ import annotations

import numpy as np
import pytest
from serving_helpers import flat_profile, trace

from dlsched.serving.disaggregated import DecodeReplica, run_pools, serve_pools
from dlsched.serving.llm_replica import LlmEngineConfig, LlmReplica
from dlsched.serving.routing import Schedule

CONFIG = LlmEngineConfig()


def test_prefill_pool_gives_first_tokens_decode_pool_the_rest() -> None:
    """Both prompts prefill together over [0, 1]; their KV caches arrive 0.5 s later; the
    decode replica admits them with no prefill and runs 2 steps of 0.1 s. A one-token request
    ends at its prefill and never reaches the decode pool."""
    p = flat_profile()
    tr = trace([0.0, 0.0, 0.0], [10, 10, 10], [3, 3, 1])
    log = run_pools(tr, lambda lg, s: LlmReplica(p, 1000, lg, CONFIG, s), [0.0],
                    lambda lg, s: DecodeReplica(p, 1000, lg, CONFIG, s), [0.0],
                    np.full(3, 0.5))
    assert log.first_token.tolist() == pytest.approx([1.0, 1.0, 1.0])
    assert log.finish.tolist() == pytest.approx([1.7, 1.7, 1.0])


def test_decode_pool_is_not_stalled_by_new_prompts() -> None:
    """Colocated, r1's prefill (1 s) stalls r0's decoding; disaggregated, r0's steps go on."""
    p = flat_profile()
    tr = trace([0.0, 1.05], [10, 10], [6, 2])
    log = run_pools(tr, lambda lg, s: LlmReplica(p, 1000, lg, CONFIG, s), [0.0],
                    lambda lg, s: DecodeReplica(p, 1000, lg, CONFIG, s), [0.0], np.zeros(2))
    assert log.finish[0] == pytest.approx(1.5)  # 5 decode steps from 1.0, never interrupted
    assert log.first_token[1] == pytest.approx(2.05)


@pytest.mark.parametrize(("decode_stop", "finish", "decode_lost"), [
    (None, [np.nan, np.nan, 3.2], 0),
    (3.15, [np.nan, np.nan, np.nan], 1),
], ids=["decode-up", "decode-stopped"])
def test_a_stopped_replica_of_either_pool_loses_what_it_held(
        decode_stop: float | None, finish: list[float], decode_lost: int) -> None:
    """The prefill replica stops at 0.5 s, amid the prefill (0-1 s) of r0 and r1: both are
    lost and never reach the decode pool; it is placed again at 1 s and serves from 1.5 s
    (restart overhead 0.5 s): r2 prefills over [2, 3] and decodes 2 steps of 0.1 s, unless
    the decode replica stops at 3.15 s, one step in. Both pools served from their first
    start to the end whatever the core did."""
    p = flat_profile()
    tr = trace([0.0, 0.0, 2.0], [10, 10, 10], [3, 3, 3])
    prefill = Schedule.of_runs([[(0.0, 0.5), (1.0, None)]], restart=0.5)
    decode = Schedule((0.0,), (decode_stop,))
    log, p_slots, d_slots = serve_pools(
        tr, lambda lg, s: LlmReplica(p, 1000, lg, CONFIG, s), prefill,
        lambda lg, s: DecodeReplica(p, 1000, lg, CONFIG, s), decode, np.zeros(3))
    assert log.finish.tolist() == pytest.approx(finish, nan_ok=True)
    assert sorted(r for s in p_slots for r in s.replica.lost) == [0, 1]
    assert sum(len(s.replica.lost) for s in d_slots) == decode_lost
