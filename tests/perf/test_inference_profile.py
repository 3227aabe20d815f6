"""Step times from Splitwise's measured profile: interpolation, outliers, held-out error, KV."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from dlsched.errors import ConfigError
from dlsched.perf.inference.curve import Curve, monotone_points
from dlsched.perf.inference.holdout import holdout_points, summary
from dlsched.perf.inference.memory import SERVING_MODELS, kv_bytes_per_token, kv_cache
from dlsched.perf.inference.profile import step_profile, step_profiles


def test_linear_curve_interpolates_and_extends_its_end_slopes() -> None:
    c = Curve((1.0, 3.0, 5.0), (10.0, 20.0, 40.0))
    assert [c(x) for x in (1, 2, 3, 4, 7)] == [10, 15, 20, 30, 60]
    assert c(0) == 5  # first segment's slope extended


def test_log_curve_gives_the_geometric_mean_halfway_in_log_x() -> None:
    c = Curve((100.0, 400.0), (1.0, 4.0), log=True)
    assert c(200) == pytest.approx(2.0)


def test_monotone_points_drop_a_far_lower_time_but_keep_small_dips() -> None:
    kept, dropped = monotone_points([(1, 1.0), (2, 0.95), (3, 2.0), (4, 0.5), (5, 3.0)])
    assert dropped == [(4, 0.5)]
    assert [x for x, _ in kept] == [1, 2, 3, 5]


def test_profile_reproduces_measured_means_and_drops_the_failed_tp2_run() -> None:
    p = step_profile("llama2-70b", "a100", 8)  # alias of A100-80G
    # 512-token prompt at batch 1: mean of its 45 repeats (prompt_time in ms in the CSV)
    assert p.prefill_seconds(512) == pytest.approx(0.094006923, rel=1e-6)
    assert p.decode(16) == pytest.approx(0.050440119, rel=1e-6)
    tp2 = step_profile("llama2-70b", "A100-80G", 2)
    assert any("32768" in d for d in tp2.dropped)
    assert tp2.prefill_seconds(32768) > tp2.prefill_seconds(16384)


def test_longer_contexts_slow_decode() -> None:
    p = step_profile("bloom-176b", "A100-80G", 8)
    assert p.decode_seconds(8, 8 * 4000) > p.decode_seconds(8, 8 * 576)


def test_unmeasured_configuration_names_what_is_measured() -> None:
    with pytest.raises(ConfigError, match=r"bloom-176b on A100-80G with tensor-parallel "
                                          r"degree 4 \(measured: .*llama2-70b on H100 TP-2"):
        step_profile("bloom-176b", "A100-80G", 4)


def test_held_out_interpolation_error() -> None:
    """Leave-one-out over interior points: the figures docs/inference.md states."""
    s = summary(holdout_points())
    assert s["decode"]["points"] >= 50 and s["prefill"]["points"] >= 70
    assert s["decode"]["median"] < 0.03 and s["decode"]["max"] < 0.10
    assert s["prefill"]["median"] < 0.10 and s["prefill"]["max"] < 0.30


def test_kv_cache_blocks_by_hand() -> None:
    llama = SERVING_MODELS["llama2-70b"]
    assert kv_bytes_per_token(llama) == 2 * 80 * 1024 * 2  # 8 KV heads x 128
    free = 8 * 80e9 * 0.9 - 2 * llama.params
    assert kv_cache("llama2-70b", "A100-80G", 8).blocks == math.floor(free / (327680 * 16))


def test_docs_kv_cache_figures_are_the_codes() -> None:
    """docs/inference.md's KV-cache paragraph, figure by figure (it said BLOOM-176B takes
    3.9 MiB a token: 4,014,080 bytes are 3.83 MiB)."""
    text = " ".join((Path(__file__).parents[2] / "docs" / "inference.md").read_text().split())
    per_token = re.search(r"Llama2-70B with GQA: (\d+) KiB; BLOOM-176B: ([\d.]+) MiB", text)
    assert per_token is not None
    assert int(per_token[1]) == kv_bytes_per_token(SERVING_MODELS["llama2-70b"]) / 2**10
    assert float(per_token[2]) == round(kv_bytes_per_token(SERVING_MODELS["bloom-176b"]) / 2**20, 1)
    tokens = re.search(r"Llama2-70B on 8 x A100-80G: ([\d.]+) M tokens; on 2 x A100-80G: (\d+) k "
                       r"tokens; BLOOM-176B on 8 x A100-80G: (\d+) k tokens", text)
    assert tokens is not None

    def stated(model: str, tp: int) -> float:
        cache = kv_cache(model, "A100-80G", tp)
        return cache.blocks * cache.block_tokens

    assert float(tokens[1]) == round(stated("llama2-70b", 8) / 1e6, 2)
    assert int(tokens[2]) == round(stated("llama2-70b", 2) / 1e3)
    assert int(tokens[3]) == round(stated("bloom-176b", 8) / 1e3)


def test_weights_that_leave_no_cache_are_an_error() -> None:
    with pytest.raises(ConfigError, match="leave no KV cache"):
        kv_cache("bloom-176b", "A100-80G", 4)


def test_every_measured_configuration_loads() -> None:
    assert len(step_profiles()) == 12
