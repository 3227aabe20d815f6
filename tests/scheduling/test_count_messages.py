"""Messages outside the pending reasons write a count of one in the singular
(``wording.count_of``): a gang short of workers, a node's cap on a group's workers or its
CPUs, a cluster too small for its hot spares, a node whose GPUs an NVLink domain does not
divide. Each read "1 workers", "1 worker(s)", "1 nodes" or "1 GPUs"."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from builders import cluster_of, cycle_state, make_cluster, make_job

from dlsched.cluster.cluster import Node
from dlsched.cluster.loader import parse_cluster_yaml
from dlsched.errors import DlschedError
from dlsched.scheduling.plugins.gang import GangPermit
from dlsched.scheduling.registry import build_policy
from dlsched.scheduling.resources import ResourceBook
from dlsched.sim.failures import llama3_model
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.job import Job, JobSpec
from dlsched.workload.trace import Trace


def _gang_short() -> str:
    job = Job(make_job("j").gpus(1).build())
    return str(GangPermit().permit(cycle_state(make_cluster(nodes=1, gpus=4)), job, ()))


def _capped_group() -> str:
    """One worker of group app on node 0, which may hold one of them."""
    book = ResourceBook.of(cluster_of(Node("n0", "V100", 4)))
    book.take((0,), JobSpec("x", 0.0, 1, 1.0, group="app", max_per_node=1))
    return book.shortfall((1,), JobSpec("y", 0.0, 1, 1.0, group="app", max_per_node=1)) or ""


def _short_of_cpus() -> str:
    book = ResourceBook.of(cluster_of(Node("n0", "V100", 2, cpus=4)))
    return book.shortfall((0,), JobSpec("y", 0.0, 1, 1.0, cpus_per_gpu=6)) or ""


def _spares_on_one_node() -> str:
    try:
        Simulator(cluster_of(Node("n0", "V100", 4)), Trace("t", (JobSpec("j", 0.0, 1, 10.0),)),
                  build_policy("fifo"), SimConfig(failures=llama3_model(), hot_spares=1))
    except DlschedError as error:
        return str(error)
    raise AssertionError("one node cannot hold one back as a spare")


def _domain_of_a_one_gpu_node() -> str:
    try:
        parse_cluster_yaml("name: c\nnode_groups:\n  - {count: 1, gpu_type: V100, gpus: 1, "
                           "nvlink_domain: 2}\n", "c.yaml")
    except DlschedError as error:
        return str(error)
    raise AssertionError("a domain of 2 does not divide 1 GPU")


@pytest.mark.parametrize(("message", "said"), [
    pytest.param(_gang_short, "gang needs 1 worker, got 0", id="gang"),
    pytest.param(_capped_group, "node 0 already runs 1 worker of app", id="max-per-node"),
    pytest.param(_short_of_cpus, "the job's 1 worker there needs 6", id="cpus-per-node"),
    pytest.param(_spares_on_one_node, "the cluster test has 1 node; at most 0 can be held back",
                 id="hot-spares"),
    pytest.param(_domain_of_a_one_gpu_node, "2 does not divide the node's 1 GPU",
                 id="nvlink-domain"),
])
def test_a_count_of_one_reads_singular(message: Callable[[], str], said: str) -> None:
    text = message()
    assert said in text and f"{said}s" not in text
