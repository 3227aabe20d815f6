"""The HTML report's per tenant table: mean JCT and wait per queue and run, hand-checked."""

from __future__ import annotations

from dataclasses import replace

from report_builders import TINY_JOBS

from dlsched.cluster.cluster import Cluster, Node
from dlsched.report.html import render_report
from dlsched.report.tenants_table import tenant_table
from dlsched.scheduling.registry import build_policy
from dlsched.sim import SimConfig, simulate
from dlsched.workload.trace import Trace

CLUSTER = Cluster("two-nodes", tuple(Node(f"n{i}", "V100", 4) for i in range(2)))


def _run(queues: dict[str, str]) -> object:
    jobs = tuple(replace(j, queue=queues.get(j.job_id, "default")) for j in TINY_JOBS)
    return simulate(CLUSTER, Trace("tiny", jobs), build_policy("fifo"),
                    SimConfig(restart_overhead=0))


def test_one_row_per_queue_with_each_runs_jct_and_wait() -> None:
    # FIFO on 8 GPUs: a (8 GPUs, 100 s) runs 0-100; b, c (4 each) 100-110 and 100-150; d (1 GPU)
    # starts at 110 when b ends. Queue x = {a, b}: JCT (100 + 109) / 2 = 104.5 s, wait
    # (0 + 99) / 2 = 49.5 s; queue y = {c, d}: JCT (148 + 112) / 2 = 130 s, wait (98 + 107) / 2.
    result = _run({"a": "x", "b": "x", "c": "y", "d": "y"})
    html = tenant_table([result])
    # each in the unit its size reads best in, as the summary tables and the console write
    # them (hours wrote 104.5 s as 0.029, and before that, two decimals, as 0.03)
    assert "<tr><td>x</td><td>2</td><td>1.7 min</td><td>49.5 s</td></tr>" in html
    assert "<tr><td>y</td><td>2</td><td>2.2 min</td><td>1.7 min</td></tr>" in html
    assert "Per tenant" in render_report([result], "t")


def test_no_table_with_a_single_queue() -> None:
    result = _run({})
    assert tenant_table([result]) == "" and "Per tenant" not in render_report([result], "t")
