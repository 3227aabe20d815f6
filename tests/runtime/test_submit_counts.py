"""The REST API's submission 400s write a count as English (``wording.count_of``): "at most 1
GPU", not "at most 1 GPUs", whichever check refuses the request."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dlsched.cluster.loader import parse_cluster_yaml
from dlsched.runtime.commands import RequestError, submit
from dlsched.runtime.models import SubmitRequest
from dlsched.runtime.service import Service

ONE_GPU = "name: one\nnode_groups:\n  - {count: 1, gpu_type: T4, gpus: 1}\n"
# two GPUs and 16 CPUs: a worker asking 16 CPUs leaves room for one worker
TWO_GPUS_16_CPUS = "name: two\nnode_groups:\n  - {count: 1, gpu_type: T4, gpus: 2, cpus: 16}\n"


@pytest.mark.parametrize(("cluster", "body", "detail"), [
    pytest.param(ONE_GPU, {"gpus": 2}, "gpus=2: this cluster can give one job at most 1 GPU",
                 id="cluster-total"),
    pytest.param(ONE_GPU, {"gpus": 1, "max_gpus": 2},
                 "max_gpus=2: this cluster can give one job at most 1 GPU", id="max-gpus"),
    pytest.param(ONE_GPU, {"gpus": 2, "gpu_type": "T4"},
                 "gpus=2: this cluster can give one job at most 1 GPU of type T4",
                 id="of-a-type"),
    pytest.param(TWO_GPUS_16_CPUS, {"gpus": 2, "cpus_per_gpu": 16},
                 "gpus=2: this cluster can give one job at most 1 GPU with cpus_per_gpu=16 "
                 "per worker", id="per-worker-shape"),
])
def test_a_refused_count_of_one_reads_singular(make_service: Callable[..., Service], cluster: str,
                                               body: dict[str, Any], detail: str) -> None:
    service = make_service(cluster=parse_cluster_yaml(cluster, "cluster.yaml"))
    with pytest.raises(RequestError) as refused:
        submit(service, SubmitRequest(command=["true"], **body))
    assert (refused.value.status, refused.value.message) == (400, detail)
