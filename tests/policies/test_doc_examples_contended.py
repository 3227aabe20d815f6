"""The example commands of the policy pages compare policies where they differ: the EDF and
ElasticFlow pages compared EDF and Tiresias on `elasticflow-195` over `philly`'s 2,816 GPUs and
the FIFO page strict and greedy FIFO on `philly-sample` over `philly`, where no job ever waits,
so each pair gave the same schedule (session 30, helper U). Each test reads the trace and
cluster from the page's own command line and runs the pair it shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dlsched.cluster import resolve_cluster
from dlsched.report import summarize
from dlsched.scheduling.registry import build_policy
from dlsched.sim import SimConfig, simulate
from dlsched.workload.bundled import resolve_trace

PAGES = Path(__file__).resolve().parents[2] / "docs" / "policies"


def _trace_and_cluster(page: str, policy_words: str) -> tuple[str, str]:
    """--trace and --cluster of the page's command that has ``policy_words``."""
    line = next(line for line in (PAGES / page).read_text().splitlines()
                if line.startswith("dlsched ") and policy_words in line)
    found = dict(re.findall(r"--(trace|cluster) (\S+)", line))
    return found["trace"], found["cluster"]


def _jct(trace: str, cluster: str, policy: str, options: dict[str, str]) -> float | None:
    result = simulate(resolve_cluster(cluster), resolve_trace(trace),
                      build_policy(policy, options), SimConfig())
    return summarize(result).jct_mean


@pytest.mark.parametrize(("page", "words", "first", "second"), [
    pytest.param("edf.md", "--policies edf,tiresias", ("edf", {}), ("tiresias", {}), id="edf"),
    pytest.param("elasticflow.md", "--policies elasticflow,edf,tiresias", ("edf", {}),
                 ("tiresias", {}), id="elasticflow"),
    pytest.param("fifo.md", "strict=false", ("fifo", {}), ("fifo", {"strict": "false"}),
                 id="fifo-greedy"),
])
def test_the_pages_example_tells_the_policies_apart(
        page: str, words: str, first: tuple[str, dict[str, str]],
        second: tuple[str, dict[str, str]]) -> None:
    trace, cluster = _trace_and_cluster(page, words)
    assert _jct(trace, cluster, *first) != _jct(trace, cluster, *second), (trace, cluster)
