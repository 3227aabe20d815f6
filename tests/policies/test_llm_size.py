"""``llm-size``: an LLM job declares its model and tokens; the policy picks its size from the
planner's feasible sizes and places TP groups on one node, pipelines in one rack."""

from __future__ import annotations

from collections import Counter

import pytest
from builders import cluster_of

from dlsched.cluster.cluster import Node
from dlsched.errors import ConfigError
from dlsched.perf.llm.hardware import gpu_spec
from dlsched.perf.llm.sizes import feasible_sizes, model_job, pick_size
from dlsched.perf.llm.throughput import LlmThroughput, best_estimate
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import JobSpec
from dlsched.workload.trace import Trace

TYPE = "A100-80G"


def _cluster(racks: int, nodes_per_rack: int) -> object:
    return cluster_of(*(Node(f"r{r}n{i}", TYPE, 8, rack=f"rack-{r}")
                        for r in range(racks) for i in range(nodes_per_rack)))


def test_feasible_sizes_fit_in_gpu_memory_with_tp_inside_a_node() -> None:
    options = feasible_sizes("llama2-70b", TYPE, 1, 128)
    assert options and options[0].gpus == 16  # 70B does not fit on one node of 80 GB GPUs
    for option in options:
        assert option.estimate.memory_gb_per_gpu <= gpu_spec(TYPE).memory_gb
        assert option.estimate.config.tp <= 8 and option.estimate.config.gpus == option.gpus


def test_pick_size_is_the_largest_efficient_size_that_fits() -> None:
    options = feasible_sizes("llama2-70b", TYPE, 1, 128)
    best = max(o.per_gpu for o in options)
    chosen = pick_size(options, 100)
    assert chosen is not None and chosen.gpus <= 100 and chosen.per_gpu >= 0.9 * best
    assert all(o.gpus <= chosen.gpus for o in options if o.gpus <= 100
               and o.per_gpu >= 0.9 * best)
    assert pick_size(options, 15) is None


def test_model_job_declares_tokens_not_gpus() -> None:
    spec = model_job("j", "llama2-70b", tokens=4e9, gpu_type=TYPE, max_gpus=64)
    assert spec.work == 954  # ceil(4e9 / (1024 x 4096))
    assert (spec.min_gpus, spec.max_gpus) == (16, 64)
    with pytest.raises(ConfigError, match="unknown model"):
        model_job("j", "gpt-9", tokens=1.0)
    with pytest.raises(ConfigError, match="tokens must be > 0"):
        model_job("j", "llama2-70b", tokens=0.0, gpu_type=TYPE)


def test_model_job_on_a_gpu_type_the_model_has_no_fabric_for() -> None:
    """megatron-1.7b on V100 said 'fits on no size up to 1024 V100' (it fits in 32 GB: the
    llm throughput model has no V100 fabric)."""
    with pytest.raises(ConfigError, match=r"job j: the llm throughput model knows no V100 "
                                          r"nodes \(known: A100, A100-80G, H100\)"):
        model_job("j", "megatron-1.7b", tokens=1e9, gpu_type="V100")


def _run(jobs: tuple[JobSpec, ...], racks: int = 2, per_rack: int = 4) -> Simulator:
    sim = Simulator(_cluster(racks, per_rack), Trace("t", jobs, throughput="llm"),
                    build_policy("llm-size"), SimConfig(restart_overhead=0.0),
                    throughput=LlmThroughput())
    sim.run()
    return sim


def test_policy_sizes_the_job_and_places_tp_on_a_node_and_pipelines_in_a_rack() -> None:
    spec = model_job("llm", "llama2-70b", tokens=2e8, gpu_type=TYPE, max_gpus=64)
    sim = _run((spec,))
    segment = next(s for s in sim.core.segments.all() if s.job_id == "llm")
    gpus = len(segment.gpus)
    chosen = pick_size(feasible_sizes("llama2-70b", TYPE, 16, 64), 64)
    assert chosen is not None and gpus == chosen.gpus
    config = best_estimate("llama2-70b", gpus, TYPE).config
    assert config.gpus == gpus
    assert chosen.estimate.memory_gb_per_gpu <= gpu_spec(TYPE).memory_gb
    per_node = Counter(int(sim.cluster.gpu_node[g]) for g in segment.gpus)
    assert all(count % config.tp == 0 for count in per_node.values())  # whole TP groups
    racks = Counter(int(sim.cluster.node_rack[n]) for n in per_node for _ in
                    range(per_node[n] // config.tp))
    assert all(groups % config.pp == 0 for groups in racks.values())  # whole pipelines
    assert sim.core.jobs["llm"].status.value == "finished"


def test_a_busy_cluster_gets_a_smaller_size_and_rigid_jobs_still_run() -> None:
    rigid = JobSpec("rigid", 0.0, 24, work=3600.0)  # takes 3 of the 8 nodes first
    spec = model_job("llm", "llama2-70b", tokens=2e8, submit_time=1.0, gpu_type=TYPE,
                     max_gpus=64)
    sim = _run((rigid, spec))
    sizes = {s.job_id: len(s.gpus) for s in sim.core.segments.all()}
    assert sizes["rigid"] == 24 and 16 <= sizes["llm"] <= 40
    assert all(j.status.value == "finished" for j in sim.core.jobs.values())
