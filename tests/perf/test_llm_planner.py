"""The parallelism planner and ``dlsched plan``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cluster.builtin import resolve_cluster
from dlsched.perf.llm.hardware import fabric_of
from dlsched.perf.llm.models import BUILTIN_MODELS, LlmModel
from dlsched.perf.llm.parallel import MODERN
from dlsched.perf.llm.planner import plan
from dlsched.perf.llm.sync import compare_sync_modes

SELENE = fabric_of(resolve_cluster("megatron-selene"))
runner = CliRunner()


@settings(max_examples=25, deadline=None)
@given(layers=st.integers(2, 48), heads=st.sampled_from([8, 16, 32]),
       width=st.sampled_from([64, 128, 256]), gpus=st.sampled_from([1, 2, 8, 16, 32]),
       batch=st.sampled_from([32, 64, 128]))
def test_planner_never_returns_a_configuration_that_does_not_fit(
        layers: int, heads: int, width: int, gpus: int, batch: int) -> None:
    model = LlmModel("m", layers=layers, hidden=heads * width, heads=heads, vocab=32000,
                     seq_len=2048, global_batch=batch)
    found = plan(model, gpus, SELENE, MODERN)
    for e in found:
        assert e.memory_gb_per_gpu <= SELENE.gpu.memory_gb
        assert e.config.gpus == gpus
        assert e.config.tp <= SELENE.gpus_per_node  # TP inside a node
    times = [e.iteration_seconds for e in found]
    assert times == sorted(times)


def test_a_model_too_big_for_the_gpus_has_no_plan() -> None:
    assert plan(BUILTIN_MODELS["megatron-1t"], 8, SELENE, MODERN) == []


def test_llama2_70b_on_64_a100() -> None:
    best = plan(BUILTIN_MODELS["llama2-70b"], 64, SELENE, MODERN)[0]
    assert best.config.tp <= 8 and best.config.gpus == 64
    assert 0.4 < best.mfu < 0.72


def test_llama2_70b_example_of_docs_llm_md_is_what_plan_prints() -> None:
    """docs/llm.md said 150.6 s and MFU 62.0%; plan printed 150.82 s, 61.9%."""
    import re
    from pathlib import Path

    text = " ".join((Path(__file__).parents[2] / "docs" / "llm.md").read_text().split())
    found = re.search(r"no recomputation, ([\d.]+) s per 4M-token iteration, MFU ([\d.]+)%, "
                      r"([\d.]+) GB per GPU", text)
    assert found is not None
    best = plan(BUILTIN_MODELS["llama2-70b"], 64, SELENE, MODERN)[0]
    assert f"{best.iteration_seconds:.1f}" == found[1]
    assert f"{100 * best.mfu:.1f}" == found[2]
    assert f"{best.memory_gb_per_gpu:.1f}" == found[3]


def test_plan_json_lists_configurations_best_first() -> None:
    result = runner.invoke(app, ["plan", "llama2-70b", "--gpus", "64", "--cluster",
                                 "megatron-selene", "--json", "--top", "3"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == 3
    assert set(rows[0]) >= {"dp", "tp", "pp", "micro_batch", "zero_stage", "iteration_seconds",
                            "pflops", "mfu", "memory_gb_per_gpu"}
    assert rows[0]["iteration_seconds"] <= rows[1]["iteration_seconds"]


def test_plan_bad_input_exits_2_naming_the_problem(tmp_path) -> None:  # noqa: ANN001
    bad = tmp_path / "m.yaml"
    bad.write_text("layers: 2\nhidden: 64\nheads: 4\nvocab: 100\nglobal_batch: 8\n")
    result = runner.invoke(app, ["plan", str(bad), "--gpus", "8", "--cluster", "megatron-selene"])
    assert result.exit_code == 2
    assert "m.yaml:1:seq_len: missing" in result.output
    result = runner.invoke(app, ["plan", "gpt3-175b", "--gpus", "0", "--cluster",
                                 "megatron-selene"])
    assert result.exit_code == 2 and "--gpus must be >= 1" in result.output


def test_plan_negative_top_is_refused_not_one_row_short() -> None:
    """``--top -1`` listed every configuration but the slowest (found[:-1]), silently."""
    result = runner.invoke(app, ["plan", "megatron-1.7b", "--gpus", "4", "--cluster",
                                 "megatron-selene", "--json", "--top", "-1"])
    assert result.exit_code == 2 and "--top must be >= 0 (0: all), got -1" in result.output


def test_sync_stale_sync_async_trade_throughput_for_staleness() -> None:
    sync, ssp, asyn = compare_sync_modes(64, 1.0, 0.2, 0.1, staleness_bound=3,
                                         staleness_cost=0.01)
    assert sync.steps_per_second < ssp.steps_per_second < asyn.steps_per_second
    assert sync.statistical_efficiency == 1 > ssp.statistical_efficiency > \
        asyn.statistical_efficiency


@pytest.mark.parametrize("gpu_type", ["A100", "A100-80G", "H100"])
def test_llm_rates_fit_the_memory_of_the_gpu_type_they_name(gpu_type: str) -> None:
    """The ``llm`` throughput model, ``llm-size``'s sizes and the resilience layouts plan on
    ``FABRICS[type]``: "A100" (40 GB, elasticflow-128, sia-64) was Selene's 80 GB, so
    llama2-70b on 16 A100 ran dp=1 tp=2 pp=8 at 79.8 GB a GPU where `dlsched plan
    --cluster elasticflow-128` finds nothing that fits."""
    from dlsched.perf.llm.hardware import GPU_SPECS
    from dlsched.perf.llm.sizes import feasible_sizes

    memory = GPU_SPECS[gpu_type].memory_gb
    for model in ("llama2-70b", "megatron-1.7b"):
        for option in feasible_sizes(model, gpu_type, 1, 64):
            assert option.estimate.memory_gb_per_gpu <= memory


def test_llm_job_on_16_a100_40gb_agrees_with_plan() -> None:
    from dlsched.perf.llm.throughput import best_estimate

    cluster = fabric_of(resolve_cluster("elasticflow-128"))
    assert cluster.gpu.name == "A100"
    assert plan(BUILTIN_MODELS["llama2-70b"], 16, cluster, MODERN) == []
    assert best_estimate("llama2-70b", 16, "A100") is None
    assert best_estimate("llama2-70b", 16, "A100-80G") is not None


def test_a_single_stage_of_an_untied_model_holds_both_embedding_tables() -> None:
    """With pp = 1 one stage holds Llama's input embedding and its (untied) output layer;
    the memory counted one table, so `plan llama2-70b --gpus 32` called dp=8 tp=4 pp=1 mb=2
    ZeRO-2 feasible at 79.93 GB on 80 GB GPUs where it needs 80.18."""
    from dlsched.perf.llm.memory import memory_use, model_state_bytes
    from dlsched.perf.llm.parallel import ParallelConfig

    llama = BUILTIN_MODELS["llama2-70b"]
    config = ParallelConfig(8, 4, 1, 2, 2, 1, 1.0)
    gathered = 4.0 * llama.layer_params / 4  # ZeRO-2's one layer of weights and gradients
    assert memory_use(llama, config, MODERN).model_states == pytest.approx(
        model_state_bytes(llama.params / 4, 2, 8) + gathered)
    for e in plan(llama, 32, SELENE, MODERN):
        assert e.memory_gb_per_gpu <= SELENE.gpu.memory_gb
        if e.config.pp == 1:
            assert e.memory.model_states >= model_state_bytes(
                llama.params / e.config.tp, e.config.zero_stage, e.config.dp)
    assert not any(e.config == config for e in plan(llama, 32, SELENE, MODERN))


def test_plan_on_a_mixed_cluster_uses_its_largest_known_gpu_type() -> None:
    """sia-64 (16 A100, 24 RTX 2080 Ti, 24 T4) was refused: 'GPU type RTX2080Ti: no peak
    FLOP/s known', its most common type, though its A100s are known."""
    fabric = fabric_of(resolve_cluster("sia-64"))
    assert (fabric.gpu.name, fabric.num_gpus) == ("A100", 16)
    result = runner.invoke(app, ["plan", "megatron-1.7b", "--gpus", "32", "--cluster",
                                 "sia-64"])
    assert result.exit_code == 2 and "--gpus 32: the cluster has 16 A100 GPUs" in result.output
    result = runner.invoke(app, ["plan", "megatron-1.7b", "--gpus", "8", "--cluster", "philly"])
    assert result.exit_code == 2
    assert "cluster philly: none of its GPU types (P100) has peak FLOP/s known" in result.output


@pytest.mark.parametrize(("model", "gpus", "message"), [
    ("gpt3-175b", 1000, "no way to split 1000 GPUs for gpt3-175b"),
    ("megatron-1t", 8, "no configuration of megatron-1t fits on 8 GPUs"),
    ("gpt3-175b", 7, "no configuration of gpt3-175b fits on 7 GPUs (A100-80G, 80 GB)"),
], ids=["no-split", "no-fit", "seven-gpus"])
def test_plan_with_no_configuration_exits_2_saying_why(model: str, gpus: int,
                                                       message: str) -> None:
    """1,000 GPUs for gpt3-175b: no dp x tp x pp divides its batch and layers; the error said
    'no configuration fits on 1000 GPUs (A100-80G, 80 GB)', as if memory were the limit.
    Session 30: a --gpus N the model cannot use exited 1 where --gpus beyond the cluster, and
    every other input plan cannot plan for, exit 2 (docs/cli.md, docs/llm.md)."""
    result = runner.invoke(app, ["plan", model, "--gpus", str(gpus), "--cluster",
                                 "megatron-selene", "--json"])
    assert result.exit_code == 2, result.output
    assert f"error: {message}" in " ".join(result.output.split())
