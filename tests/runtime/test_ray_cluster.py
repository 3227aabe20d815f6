"""Building the dlsched cluster from ``ray.nodes()`` entries (no Ray needed): GPU count, the
``gpu_type:<T>`` resource, node names and order, and clear errors for nodes it cannot use."""

from __future__ import annotations

from typing import Any

import pytest

from dlsched.errors import ConfigError
from dlsched.runtime.executors.ray_cluster import cluster_from_ray_nodes, node_from_ray


def ray_node(node_id: str, gpus: float, address: str = "10.0.0.1", alive: bool = True,
             **resources: float) -> dict[str, Any]:
    return {"NodeID": node_id, "Alive": alive, "NodeManagerAddress": address,
            "Resources": {"CPU": 8.0, **({"GPU": gpus} if gpus else {}), **resources}}


@pytest.mark.parametrize(("info", "expected"), [
    (ray_node("ab" * 28, 4, **{"gpu_type:V100": 4}), ("node-abababab", "V100", 4)),
    (ray_node("cd" * 28, 2), ("node-cdcdcdcd", "generic", 2)),
    (ray_node("ef" * 28, 0), None),  # a CPU-only head node is left out
    (ray_node("01" * 28, 4, alive=False), None),
], ids=["typed", "untyped", "no-gpus", "dead"])
def test_one_ray_node(info: dict[str, Any], expected: tuple[str, str, int] | None) -> None:
    node = node_from_ray(info)
    assert (None if node is None else (node.name, node.gpu_type, node.num_gpus)) == expected


@pytest.mark.parametrize(("info", "message"), [
    (ray_node("aa" * 28, 1.5), "resource GPU: a whole number is needed, got 1.5"),
    (ray_node("aa" * 28, 2, **{"gpu_type:T4": 1, "gpu_type:V100": 1}),
     "resource gpu_type: one type per node, got T4, V100"),
    (ray_node("aa" * 28, 2, **{"gpu_type:": 2}), "the type name after ':' is empty"),
], ids=["fractional", "two-types", "empty-type"])
def test_bad_nodes_name_the_node_and_the_resource(info: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match="Ray node a{56} \\(10.0.0.1\\)") as error:
        node_from_ray(info)
    assert message in str(error.value)


def test_nodes_are_ordered_by_address_then_id_with_global_gpu_numbers() -> None:
    built = cluster_from_ray_nodes([
        ray_node("bb" * 28, 2, "10.0.0.2"), ray_node("cc" * 28, 0, "10.0.0.0"),
        ray_node("aa" * 28, 4, "10.0.0.2", **{"gpu_type:A100": 4}),
        ray_node("dd" * 28, 1, "10.0.0.1")])
    assert [n.name for n in built.cluster.nodes] == ["node-dddddddd", "node-aaaaaaaa",
                                                     "node-bbbbbbbb"]
    assert [built.node_of_gpu(g).node_id[:2] for g in range(7)] == ["dd"] + ["aa"] * 4 + \
        ["bb"] * 2
    assert built.cluster.num_gpus == 7


def test_a_cluster_without_gpus_is_refused() -> None:
    with pytest.raises(ConfigError, match="no live node with GPUs"):
        cluster_from_ray_nodes([ray_node("aa" * 28, 0)])


def test_cpus_and_memory_come_from_rays_resources_and_bound_a_request() -> None:
    """A worker's bundle asks Ray for ``CPU`` and ``memory``: the core books the same
    amounts, and a request no node can ever hold is refused (it used to be placed, then wait
    in Ray for good, shown as running with no attempt)."""
    from dlsched.runtime.models import SubmitRequest
    from dlsched.runtime.sharing import problem

    built = cluster_from_ray_nodes([ray_node("aa" * 28, 4, memory=6 * 2**30)])
    node = built.cluster.nodes[0]
    assert (node.cpus, node.memory_gb) == (8.0, 6.0)
    assert built.nodes[0].cpus == 8.0
    request = SubmitRequest(command=["true"], gpus=1, cpus_per_gpu=9)
    assert problem(built.cluster, request) == (
        "cpus_per_gpu=9: more CPUs than any node of this cluster has (the most: 8)")
    request = SubmitRequest(command=["true"], gpus=1, memory_gb_per_gpu=7)
    assert problem(built.cluster, request) is not None


def test_a_mig_job_needs_a_ray_node_that_offers_its_instance() -> None:
    """A MIG worker's bundle asks ``mig-<profile>``: a profile no node offers is a 400 naming
    the field and the resource (it used to wait in Ray for good, shown as running)."""
    from types import SimpleNamespace

    from dlsched.runtime.commands import RequestError, _ray_problem
    from dlsched.runtime.models import SubmitRequest

    built = cluster_from_ray_nodes([
        ray_node("aa" * 28, 4, "10.0.0.1", **{"gpu_type:A100": 4, "mig-3g.20gb": 2}),
        ray_node("bb" * 28, 4, "10.0.0.2", **{"gpu_type:A100": 4})])
    assert [n.mig_profiles for n in built.nodes] == [frozenset({"3g.20gb"}), frozenset()]
    service = SimpleNamespace(cluster=built.cluster, config=SimpleNamespace(ray_cluster=built))
    _ray_problem(service, SubmitRequest(command=["true"], gpus=1, mig_profile="3g"))  # offered
    with pytest.raises(RequestError) as error:
        _ray_problem(service, SubmitRequest(command=["true"], gpus=1, mig_profile="1g.5gb"))
    assert error.value.status == 400
    assert error.value.message == (
        "mig_profile=1g.5gb: no node of the Ray cluster offers the resource mig-1g.5gb (start "
        "MIG nodes with ray start --resources '{\"mig-1g.5gb\": N}')")
    # A100 and H100 nodes: 3g names either instance, and the H100 node offers its own.
    mixed = cluster_from_ray_nodes([
        ray_node("aa" * 28, 4, "10.0.0.1", **{"gpu_type:A100": 4}),
        ray_node("bb" * 28, 4, "10.0.0.2", **{"gpu_type:H100": 4, "mig-3g.40gb": 2})])
    service = SimpleNamespace(cluster=mixed.cluster, config=SimpleNamespace(ray_cluster=mixed))
    _ray_problem(service, SubmitRequest(command=["true"], gpus=1, mig_profile="3g"))


def test_an_address_where_nothing_listens_is_refused_at_once() -> None:
    """``dlsched serve --executor ray --ray-address HOST:PORT`` with no Ray head there: one
    line within seconds (``ray.init`` retried for over two minutes, printing Ray's warnings)."""
    import socket
    import time

    ray = pytest.importorskip("ray")
    from dlsched.runtime.executors.ray_cluster import connect

    if ray.is_initialized():
        pytest.skip("this process is already a Ray driver")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ConfigError, match=f"--ray-address 127.0.0.1:{port}: cannot connect: "
                                          "Connection refused"):
        connect(f"127.0.0.1:{port}")
    assert time.monotonic() - started < 10 and not ray.is_initialized()


@pytest.mark.parametrize("timeout", [0.0, -5.0], ids=["zero", "negative"])
def test_the_orphan_timeout_must_be_positive(timeout: float) -> None:
    """0 would release a live service's workers between two renewals of its lease."""
    from pathlib import Path

    from dlsched.runtime.server import ServeOptions, check_options

    with pytest.raises(ConfigError, match="--orphan-timeout must be more than 0"):
        check_options(ServeOptions(Path("/tmp/x"), executor="ray", orphan_timeout=timeout))
