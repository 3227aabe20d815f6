"""What ``serve`` says at start about a tenant file that does not fit its cluster: a flavor
whose GPU types no node has (``--gpus 2`` is of type ``generic`` unless ``--gpu-type`` says
otherwise) admits jobs that can never run. ``dlsched simulate`` warns about it
(``tenancy.assignment.empty_flavors``); ``serve`` started without a word, and every job of
such a queue waited for ever with "no flavor of its cluster queue serves its GPU types"."""

from __future__ import annotations

from pathlib import Path

from dlsched.runtime.server import local_cluster, start_warnings
from dlsched.runtime.service import Service, ServiceConfig
from dlsched.tenancy.loader import load_tenants

TENANTS = """\
flavors:
  - {name: t4, gpu_types: [T4]}
cluster_queues:
  - {name: team-a, quotas: {t4: {gpu: 2}}}
"""


def service(tmp_path: Path, gpu_type: str, services: list[Service]) -> Service:
    path = tmp_path / "tenants.yaml"
    path.write_text(TENANTS)
    started = Service(ServiceConfig(local_cluster(2, gpu_type), tmp_path / gpu_type,
                                    poll_seconds=0.05, tenants=load_tenants(path)))
    services.append(started)
    started.start()
    return started


def test_a_flavor_no_node_of_the_service_has_is_named_at_start(
        tmp_path: Path, services: list[Service]) -> None:
    warnings = start_warnings(service(tmp_path, "generic", services))
    assert len(warnings) == 1, warnings
    assert "flavor 't4' (gpu_types T4) matches no GPU node" in warnings[0]
    assert "(cluster queues team-a)" in warnings[0] and warnings[0].startswith("WARNING: ")


def test_a_tenant_file_that_fits_says_nothing(tmp_path: Path,
                                               services: list[Service]) -> None:
    assert start_warnings(service(tmp_path, "T4", services)) == []
