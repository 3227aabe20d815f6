"""The real service end to end: the tiny causal LM's KV cache gives the logits of a full
forward pass; replicas are placed by the scheduler core and answer over HTTP; the profiler
writes a file the simulator's performance model reads."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # serving_helpers

pytest.importorskip("torch", reason="the real service needs the torch extra")
pytest.importorskip("fastapi", reason="the real service needs the runtime extra")
pytest.importorskip("uvicorn", reason="the real service needs the runtime extra")

import torch  # noqa: E402
from fastapi.testclient import TestClient  # noqa: E402

from dlsched.errors import InputError  # noqa: E402
from dlsched.job.tiny_lm import KvSlots, TinyCausalLM, TinyLmConfig  # noqa: E402
from dlsched.perf.inference.profile import read_step_profiles  # noqa: E402
from dlsched.serving.llm_replica import LlmEngineConfig  # noqa: E402
from dlsched.serving.real.http import create_app  # noqa: E402
from dlsched.serving.real.profiler import ProfilePlan, profile_rows, write_profile  # noqa: E402
from dlsched.serving.real.replica import ReplicaSettings  # noqa: E402
from dlsched.serving.real.service import ServiceOptions  # noqa: E402
from dlsched.serving.real.validate import serve_and_replay  # noqa: E402
from dlsched.serving.requests import RequestTrace  # noqa: E402

SMALL = ReplicaSettings(d_model=32, heads=2, layers=1, max_context=128, slots=8, kv_blocks=64,
                        engine=LlmEngineConfig(max_batch=8, max_prefill_tokens=256,
                                               prefix_cache=False))


def test_decoding_from_the_cache_gives_the_full_forward_pass() -> None:
    torch.set_num_threads(1)
    cfg = TinyLmConfig(d_model=32, heads=2, layers=2, max_context=64, seed=5)
    model, cache = TinyCausalLM(cfg), KvSlots(cfg, 4)
    a, b = [3, 1, 4, 1, 5, 9, 2], [2, 7, 1]
    model.prefill([a, b], [2, 0], cache)  # two prompts packed, in slots 2 and 0
    stepped = model.decode_logits([6, 8], [2, 0], [len(a), len(b)], cache)
    full = model.prefill_logits([a + [6], b + [8]], [1, 3], KvSlots(cfg, 4))
    torch.testing.assert_close(stepped, full, rtol=1e-4, atol=1e-5)
    again = TinyCausalLM(cfg).prefill_logits([a], [0], KvSlots(cfg, 1))
    torch.testing.assert_close(again, model.prefill_logits([a], [0], KvSlots(cfg, 1)))


def test_the_core_places_replicas_that_answer_over_http() -> None:
    with TestClient(create_app(ServiceOptions(replicas=1, cpus=2, settings=SMALL,
                                              pin=False))) as client:
        service = client.app.state.service
        (job,) = service.core.running.values()
        assert job.spec.kind.value == "service" and job.allocation == (0,)
        answer = client.post("/v1/completions", json={"prompt": "hello", "max_tokens": 5})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert len(body["tokens"]) == 5 and body["replica"] == 0
        assert body["arrived"] <= body["first_token"] <= body["finished"]
        too_long = client.post("/v1/completions", json={"prompt": "x" * 120, "max_tokens": 20})
        assert too_long.status_code == 422 and "max_tokens" in too_long.text
        bad = client.post("/v1/completions", json={"prompt_tokens": [1, 300]})
        assert bad.status_code == 422 and "prompt_tokens" in bad.text
        stats = client.get("/stats").json()
        assert {it["phase"] for it in stats["iterations"]} == {"prefill", "decode"}
        assert client.get("/health").json() == {"replicas": 1, "ready": 1}


def test_a_replayed_trace_is_served_and_timed() -> None:
    trace = RequestTrace.of("t", [0.0, 0.01, 0.02, 0.2], [5, 30, 12, 8], [4, 6, 2, 3])
    options = ServiceOptions(replicas=1, cpus=1, settings=SMALL, pin=False)
    (alone, served), [(rows, stats)] = asyncio.run(serve_and_replay(options, [trace], 0, 2))
    assert [r.status for r in alone + rows] == [200] * 6
    # the calibration's own iterations: one prefill per request sent alone
    assert sum(it["phase"] == "prefill" for it in served["iterations"]) == 2
    for r in rows:
        assert r.sent <= r.first_token <= r.finished <= r.received
    assert sum(it["phase"] == "prefill" for it in stats["iterations"]) >= 2


def test_the_profiler_writes_what_the_performance_model_reads(tmp_path: Path) -> None:
    plan = ProfilePlan(prompts=(4, 16), batches=(2, 4), sweep_prompt=8, tokens=3, repeats=1)
    write_profile(profile_rows(SMALL, plan), tmp_path / "p.csv")
    profile = read_step_profiles(tmp_path / "p.csv")[("tiny-lm", "cpu", 1)]
    assert profile.reference_context == 8 + 3 / 2
    assert profile.prefill_seconds(16) > 0 and profile.decode_seconds(2, 20) > 0
    text = (tmp_path / "p.csv").read_text().splitlines()
    text[2] = text[2].replace(",3,", ",x,", 1)
    (tmp_path / "bad.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match=r"bad.csv:3:token_size: not a number"):
        read_step_profiles(tmp_path / "bad.csv")


def test_the_step_grid_profile_fits_and_the_validation_profile_uses_it(tmp_path: Path) -> None:
    from dlsched.perf.inference.fit import held_out, write_steps
    from dlsched.serving.real.profiler import profile_steps, step_runs
    from dlsched.serving.real.validate import load_profile, steps_path

    plan = ProfilePlan(prompts=(4, 16), batches=(2, 4), sweep_prompt=8, tokens=3, repeats=1,
                       grid_batches=(1, 2, 4), grid_contexts=(4, 16, 120), grid_tokens=3,
                       grid_repeats=1, mixed_runs=(3,), mixed_longest=40, wake_runs=1)
    runs = step_runs(SMALL, plan)
    # contexts up to 128 - 3 output tokens: all three fit; 3 mixed prompts of 4-40 tokens
    assert [kind for _, kind in runs] == ["grid"] * 9 + ["mixed"]
    assert all(4 <= n <= 40 for n in runs[-1][0]) and len(runs[-1][0]) == 3
    points = profile_steps(SMALL, plan)
    assert {p.kind for p in points} == {"grid", "mixed", "wake", "warm", "gap"}
    assert all(p.phase == "gap" for p in points if p.kind == "gap")
    # 4 prompts of 120 tokens make two packs under max_prefill_tokens 256
    assert any(p.phase == "prefill" and p.batch == 2 and p.tokens == 240 for p in points)
    decode = [p for p in points if p.phase == "decode" and p.kind == "grid"]
    assert sorted({p.batch for p in decode}) == [1, 2, 4]
    assert {p.tokens for p in decode if p.batch == 2} == {2 * 5.5, 2 * 17.5, 2 * 121.5}
    write_profile(profile_rows(SMALL, plan), tmp_path / "p.csv")
    write_steps(points, steps_path(tmp_path / "p.csv"))
    profile = load_profile(tmp_path / "p.csv", SMALL, tmp_path / "p-steps.csv")
    assert profile.fit is not None and profile.fit.decode_batches == (1, 2, 4)
    assert 0 < profile.fit.gap < 0.01
    assert set(held_out(points)) == {"prefill_loo", "decode_loo", "prefill_mixed",
                                     "decode_mixed"}


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs CPU affinity and two CPUs")
def test_a_pinned_pool_keeps_the_front_end_off_the_replicas_cpus_until_closed() -> None:
    from dlsched.serving.real.pool import ReplicaPool

    before = os.sched_getaffinity(0)
    pool = ReplicaPool(SMALL, lambda event: None, pin=True)
    cpu = min(before)
    pool._front_end_off({cpu})
    try:
        assert cpu not in os.sched_getaffinity(0)
        assert pool._reader.native_id is not None
        assert cpu not in os.sched_getaffinity(pool._reader.native_id)  # every thread moved
    finally:
        pool.close()
    assert os.sched_getaffinity(0) == before


def test_the_profile_drift_is_the_median_ratio_of_the_points_measured_twice() -> None:
    from dataclasses import replace

    from dlsched.perf.inference.fit import StepPoint
    from dlsched.serving.real.validate import profile_drift, table

    before = [StepPoint("decode", b, 65.0 * b, 0, 0.002 * b) for b in (1, 4, 16)] + [
        StepPoint("prefill", 1, 64, 4096, 0.009), StepPoint("prefill", 4, 256, 16384, 0.03),
        StepPoint("decode", 3, 900, 0, 0.004, kind="mixed")]
    after = [replace(p, seconds=p.seconds * (1.1 if p.phase == "decode" else 1.0))
             for p in before if p.kind == "grid" and p.batch != 4]
    assert profile_drift(before, after) == pytest.approx({"prefill": 1.0, "decode": 1.1})
    assert profile_drift(before, []) == {"prefill": None, "decode": None}
    text = table({"levels": [], "profile_drift": {"prefill": 1.0, "decode": 1.1}})
    assert text.endswith("profile re-measured after the replay / before: prefill 1.00, "
                         "decode 1.10")


def _validate_folder(out: Path) -> None:
    """A validate run's files, made up: one level, 6 requests, calibration steps."""
    import json
    from dataclasses import asdict

    from dlsched.serving.real.loadgen import Measured, write_measured

    plan = ProfilePlan(prompts=(4, 16), batches=(2, 4), sweep_prompt=8, tokens=3, repeats=1)
    write_profile(profile_rows(SMALL, plan), out / "profile.csv")
    rows = [Measured(i, 0.05 * i, 0.05 * i + 0.001, 0.05 * i + 0.004, 0.05 * i + 0.02,
                     0.05 * i + 0.021, 6 + i, 4, 0, 0, 200) for i in range(6)]
    write_measured(rows, out / "measured-0.5.csv")
    steps = [{"replica": 0, "start": 0.01 * k, "seconds": 0.001 * (1 + k % 3),
              "phase": "prefill" if k % 4 == 0 else "decode", "batch": 1 + k % 2,
              "tokens": 8 + k, "blocks_used": 1} for k in range(40)]
    (out / "stats-0.5.json").write_text(json.dumps({"iterations": steps}))
    (out / "spread-stats-0.5.json").write_text(json.dumps(
        {"before": {"iterations": steps[:20]}, "after": {"iterations": steps[20:]}}))
    report = {"plan": {"replicas": 1, "seed": 0, "step_model": "curves",
                       "spread_requests": 3, "spread_draws": 4},
              "settings": asdict(SMALL), "trace": "made-up",
              "front_end": {"ingress": 0.001, "egress": 0.0005},
              "levels": [{"load": 0.5, "rate_multiplier": 1.0}]}
    (out / "comparison.json").write_text(json.dumps(report))


def test_resimulate_runs_a_saved_validation_again_without_serving(tmp_path: Path) -> None:
    import json
    from dataclasses import replace

    from typer.testing import CliRunner

    from dlsched.cli import app
    from dlsched.serving.real.loadgen import read_measured, replayed_trace
    from dlsched.serving.real.validate import (
        FrontEnd,
        _level,
        load_profile,
        measured_spread,
        resimulate,
    )

    _validate_folder(tmp_path)
    rows = read_measured(tmp_path / "measured-0.5.csv")
    assert [r.prompt for r in rows] == list(range(6, 12))
    assert rows[3].scheduled == 0.05 * 3  # floats read back exactly
    trace = replayed_trace(rows, "made-up")
    report = resimulate(tmp_path)
    level = report["levels"][0]
    # the same as validate's own comparison of that level: the spread from the calibration
    # replays, 4 pooled draws (the run's), the front end's delays
    profile = load_profile(tmp_path / "profile.csv", SMALL, None)
    stats = json.loads((tmp_path / "spread-stats-0.5.json").read_text())
    spread = measured_spread(stats["before"]["iterations"] + stats["after"]["iterations"],
                             profile, 0)
    direct = _level(0.5, 1.0, trace, rows, replace(profile, spread=spread), SMALL, 1,
                    FrontEnd(0.001, 0.0005), 4)
    assert level["latency_p99"] == direct["latency_p99"]
    assert level["spread_draws"] == 4 and level["step_spread"]["requests"] == 6
    assert level["decode_time_ratio_p50"] > 0
    assert json.loads((tmp_path / "resimulated.json").read_text())["levels"][0][
        "latency_p50"] == level["latency_p50"]
    assert resimulate(tmp_path, 1)["levels"][0]["spread_draws"] == 1
    runner = CliRunner()
    result = runner.invoke(app, ["inference", "resimulate", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "| 0.5 |" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(app, ["inference", "resimulate", str(empty)])
    assert result.exit_code == 2 and "not a validate run's folder" in result.output


def test_the_front_end_delay_takes_off_each_calibration_requests_measured_prefill() -> None:
    from serving_helpers import flat_profile

    from dlsched.serving.real.loadgen import Measured
    from dlsched.serving.real.validate import FrontEnd

    profile = flat_profile(0.01, 0.001)  # no fit: no wake-up
    rows = [Measured(i, 0.0, 0.0, 0.02 + 0.001 * i, 0.03, 0.031, 32, 4, 0, 0, 200)
            for i in range(3)]
    its = [{"phase": "prefill", "start": float(i), "seconds": 0.015} for i in range(3)]
    its.insert(1, {"phase": "decode", "start": 0.5, "seconds": 0.001})
    front = FrontEnd.of(rows, profile, its)
    assert front.ingress == pytest.approx(0.006)  # median of 0.005, 0.006, 0.007
    assert front.egress == pytest.approx(0.001)
    # no iterations, or not one prefill per request: the profile's prefill comes off
    model = FrontEnd.of(rows, profile)
    assert model.ingress == pytest.approx(max(0.0, 0.021 - profile.prefill_seconds(32)))
    assert FrontEnd.of(rows, profile, its[:2]).ingress == model.ingress

