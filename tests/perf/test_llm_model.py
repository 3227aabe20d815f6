"""The analytic training model: FLOPs, memory, communication, the published-run checks."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
from shared_data import shared

from dlsched.errors import ConfigError, InputError
from dlsched.perf.llm import comm
from dlsched.perf.llm.flops import iteration_flops, megatron_formula
from dlsched.perf.llm.iteration import MEMORY_TRAFFIC, estimate
from dlsched.perf.llm.memory import memory_use
from dlsched.perf.llm.models import BUILTIN_MODELS, parse_model_yaml, resolve_model
from dlsched.perf.llm.parallel import MEGATRON_2021, MODERN, ParallelConfig
from dlsched.perf.llm.reference import (
    PUBLISHED,
    SELENE,
    calibrate_memory_traffic,
    predict,
)

VIDUR = "profiles/inference/vidur"


@pytest.mark.parametrize("name, billions", [("megatron-1t", 1008.0), ("megatron-530b", 529.6),
                                            ("megatron-146b", 145.6), ("gpt3-175b", 174.6),
                                            ("llama2-70b", 69.0), ("llama3-405b", 405.9)])
def test_parameter_counts_match_the_papers(name: str, billions: float) -> None:
    assert BUILTIN_MODELS[name].params / 1e9 == pytest.approx(billions, rel=0.002)


@pytest.mark.parametrize("recompute", [True, False], ids=["recompute", "no-recompute"])
@pytest.mark.parametrize("name", ["megatron-1t", "gpt3-175b", "megatron-1.7b"])
def test_flops_equal_megatrons_closed_form(name: str, recompute: bool) -> None:
    model = BUILTIN_MODELS[name]
    assert iteration_flops(model, float(recompute)) == pytest.approx(
        megatron_formula(model, recompute), rel=1e-4)


def test_one_trillion_within_ten_percent_of_502_pflops() -> None:
    check = predict(next(r for r in PUBLISHED if r.name == "megatron-1t"))
    assert abs(check.rel_diff) < 0.10
    assert check.estimate.pflops == pytest.approx(502, rel=0.10)
    # MFU without recomputation counted: 163 * 3/4 / 312 = 39%
    assert check.estimate.mfu == pytest.approx(0.39, abs=0.04)


@pytest.mark.parametrize("run", [r for r in PUBLISHED if not r.calibration and
                                 r.name != "megatron-1t"], ids=lambda r: r.name)
def test_other_published_runs_within_fifteen_percent(run) -> None:  # noqa: ANN001
    assert abs(predict(run).rel_diff) < 0.15


def test_memory_traffic_constant_is_the_calibrated_one() -> None:
    assert calibrate_memory_traffic() == pytest.approx(MEMORY_TRAFFIC, rel=0.01)


def test_pipeline_bubble_is_p_minus_1_over_v_m() -> None:
    model = BUILTIN_MODELS["megatron-1t"]
    for v in (1, 2, 4):
        config = ParallelConfig(6, 8, 64, 1, 1, v)
        e = estimate(model, config, SELENE, MEGATRON_2021)
        m = config.microbatches(model.global_batch)
        assert e.bubble_seconds / (m * e.stage_seconds) == pytest.approx(63 / (v * m))


def test_zero_stages_shrink_memory_in_order() -> None:
    model = BUILTIN_MODELS["llama2-70b"]
    used = [memory_use(model, ParallelConfig(64, 1, 1, 1, z, 1, 1.0), MODERN).model_states
            for z in range(4)]
    assert used[0] > used[1] > used[2] > used[3]
    params = model.params
    assert used[0] == pytest.approx(16 * params, rel=0.01)


def test_recomputation_trades_memory_for_time() -> None:
    model = BUILTIN_MODELS["gpt3-175b"]
    full, none = (estimate(model, ParallelConfig(16, 8, 8, 1, 1, 1, r), SELENE, MODERN)
                  for r in (1.0, 0.0))
    assert full.memory_gb_per_gpu < none.memory_gb_per_gpu
    assert full.iteration_seconds > none.iteration_seconds
    assert full.mfu < none.mfu and full.hardware_flops > none.hardware_flops


def test_collectives() -> None:
    mb = 1e9
    assert comm.ring_allreduce(mb, 1, 100) == 0
    ring = comm.ring_allreduce(mb, 8, 100)
    assert ring == pytest.approx(2 * 7 / 8 * mb / 100e9, rel=0.01)
    # hierarchical with one GPU per node is a ring over the NICs
    assert comm.hierarchical_allreduce(mb, 1, 8, 300, 25) == pytest.approx(
        comm.ring_allreduce(mb, 8, 25))
    # a parameter server with fewer servers than workers is server-bound
    few = comm.parameter_server(mb, 64, 4, 25, 25)
    assert few == pytest.approx(2 * 64 * mb / (4 * 25e9))
    assert comm.parameter_server(mb, 64, 64, 25, 25) == pytest.approx(2 * mb / 25e9)


def test_model_yaml_errors_name_file_line_and_field() -> None:
    with pytest.raises(InputError, match=r"m.yaml:1:seq_len: missing"):
        parse_model_yaml("layers: 2\nhidden: 64\nheads: 4\nvocab: 100\nglobal_batch: 8\n",
                         "m.yaml")
    with pytest.raises(InputError, match=r"m.yaml:3:heads: must divide hidden"):
        parse_model_yaml("layers: 2\nhidden: 64\nheads: 5\nvocab: 100\nseq_len: 16\n"
                         "global_batch: 8\n", "m.yaml")
    with pytest.raises(InputError, match=r"m.yaml:2:hiden: unknown key"):
        parse_model_yaml("layers: 2\nhiden: 64\n", "m.yaml")
    model = parse_model_yaml("layers: 2\nhidden: 64\nheads: 4\nvocab: 100\nseq_len: 16\n"
                             "global_batch: 8\ngated_mlp: true\n", "tiny.yaml")
    assert (model.name, model.ffn_hidden, model.kv_heads) == ("tiny", 256, 4)
    with pytest.raises(ConfigError, match="unknown model"):
        resolve_model("no-such-model")


@pytest.mark.parametrize("hidden, heads, message", [
    ("", "4", r"m.yaml:2:hidden: must be an integer >= 1, got None"),
    ("{}", "4", r"m.yaml:2:hidden: must be an integer >= 1, got \{\}"),
    ("[64]", "4", r"m.yaml:2:hidden: must be an integer >= 1"),
    ("64", "", r"m.yaml:3:heads: must be an integer >= 1, got None"),
    ("6.4e1", "4", r"m.yaml:2:hidden: must be an integer >= 1, got '6.4e1' \(YAML reads 6.4e1 "
     r"as text: write the number in full\)"),
    ("'64'", "4", r"m.yaml:2:hidden: must be an integer >= 1, got '64' \(a quoted number is "
     r"text: drop the quotes\)"),
], ids=["empty-hidden", "mapping-hidden", "list-hidden", "empty-heads", "exponent-as-text",
        "quoted-number"])
def test_model_yaml_empty_or_odd_shape_is_a_field_error(hidden: str, heads: str,
                                                        message: str) -> None:
    """``hidden:`` left empty was a TypeError traceback (None * 4 for ffn_hidden's default);
    ``6.4e1`` and ``'64'``, text to YAML 1.1, were refused without saying why."""
    text = (f"layers: 2\nhidden: {hidden}\nheads: {heads}\nvocab: 100\nseq_len: 16\n"
            "global_batch: 8\n")
    with pytest.raises(InputError, match=message):
        parse_model_yaml(text, "m.yaml")


def test_model_yaml_name_must_be_a_string() -> None:
    with pytest.raises(InputError, match=r"m.yaml:7:name: must be a string"):
        parse_model_yaml("layers: 2\nhidden: 64\nheads: 4\nvocab: 100\nseq_len: 16\n"
                         "global_batch: 8\nname: [1]\n", "m.yaml")


@pytest.mark.data
def test_gpu_constants_are_vidurs_fit() -> None:
    vidur = shared(VIDUR)
    from dlsched.perf.llm.calibrate import fit_gemm, gemm_points, nvlink_bus_fraction
    from dlsched.perf.llm.hardware import GPU_SPECS

    a100 = GPU_SPECS["A100-80G"]
    fit = fit_gemm(gemm_points(vidur / "compute_a100_meta-llama_Llama-2-70b-hf_mlp.csv", 312e12))
    assert fit.efficiency == pytest.approx(a100.gemm_efficiency, abs=0.005)
    assert math.log(fit.half_flops) == pytest.approx(math.log(a100.gemm_half_flops), abs=0.05)
    fraction = nvlink_bus_fraction(vidur / "network_a100_dgx_all_reduce.csv", 300.0)
    assert fraction == pytest.approx(a100.nvlink_bus_fraction, abs=0.005)


def test_interleaving_and_software_options_change_the_estimate() -> None:
    model = BUILTIN_MODELS["megatron-530b"]
    plain = estimate(model, ParallelConfig(9, 8, 35, 1, 1, 1), SELENE, MEGATRON_2021)
    modern = estimate(model, ParallelConfig(9, 8, 35, 1, 1, 1), SELENE,
                      replace(MEGATRON_2021, flash_attention=True))
    assert modern.memory_gb_per_gpu < plain.memory_gb_per_gpu
