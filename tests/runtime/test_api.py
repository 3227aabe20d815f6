"""API contract: validation (nothing stored on a bad request), auth, errors, OpenAPI, metrics."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import Live, worker

BAD_SUBMISSIONS = [
    pytest.param({"gpus": 1, "command": ["true"], "colour": "red"}, 422, "colour",
                 id="unknown-field"),
    pytest.param({"gpus": 1, "command": []}, 422, "command", id="empty-command"),
    pytest.param({"gpus": 1, "command": "python train.py"}, 422, "command",
                 id="command-as-string"),
    pytest.param({"gpus": 5, "command": ["true"]}, 400, "at most 4 GPUs", id="too-many-gpus"),
    pytest.param({"gpus": 0, "command": ["true"]}, 400, "at least 1", id="zero-gpus"),
    pytest.param({"gpus": 1, "command": ["true"], "gpu_type": "H100"}, 400,
                 "gpu_type='H100': this cluster has no GPU of type 'H100'",
                 id="unknown-gpu-type"),
    pytest.param({"gpus": 2, "command": ["true"], "min_gpus": 3}, 400,
                 "min_gpus=3: more than gpus=2", id="min-above-gpus"),
    pytest.param({"gpus": 2, "command": ["true"], "max_gpus": 1}, 400,
                 "max_gpus=1: fewer than gpus=2", id="max-below-gpus"),
    pytest.param({"gpus": 1, "command": ["true"], "queue": "bad queue!"}, 422, "queue",
                 id="queue-name"),
]


@pytest.mark.parametrize(("body", "status", "message"), BAD_SUBMISSIONS)
def test_bad_submissions_are_refused_and_nothing_is_stored(
        live: Callable[..., Live], body: dict[str, Any], status: int, message: str) -> None:
    client = live().http
    response = client.post("/v1/jobs", json=body)
    assert response.status_code == status
    assert message in response.text
    assert client.get("/v1/jobs").json() == []


def test_a_gang_too_big_for_its_shape_names_gpus_and_the_shape(
        live: Callable[..., Live]) -> None:
    """Two 4-GPU nodes of 32 CPUs: 16 CPUs per worker leave room for 4 workers in all."""
    from dlsched.cluster.loader import parse_cluster_yaml

    cluster = parse_cluster_yaml("name: lab\nnode_groups:\n  - {count: 2, gpu_type: A100, "
                                 "gpus: 4, cpus: 32}\n", "lab.yaml")
    client = live(cluster=cluster).http
    response = client.post("/v1/jobs", json={"gpus": 5, "cpus_per_gpu": 16,
                                             "command": ["true"]})
    assert (response.status_code, response.json()["detail"]) == (
        400, "gpus=5: this cluster can give one job at most 4 GPUs with cpus_per_gpu=16 per "
             "worker")


def test_a_working_dir_that_does_not_exist_is_refused(live: Callable[..., Live],
                                                      tmp_path: Path) -> None:
    """It was accepted, and the job failed to start three times over 30 s of backoff."""
    client = live().http
    missing = str(tmp_path / "no-such-dir")
    response = client.post("/v1/jobs", json={"gpus": 1, "command": ["true"],
                                             "working_dir": missing})
    assert (response.status_code, response.json()["detail"]) == (
        400, f"working_dir {missing!r}: no such directory on the service's machine")
    assert client.get("/v1/jobs").json() == []


def test_any_queue_name_is_accepted_for_now(live: Callable[..., Live], out: Path) -> None:
    client = live().http
    response = client.post("/v1/jobs", json={"gpus": 1, "queue": "team-a",
                                             "command": worker("sleep", out, 0)})
    assert response.status_code == 201
    assert response.json()["queue"] == "team-a"
    assert client.get("/v1/jobs", params={"queue": "team-a"}).json()[0]["id"] == "job-000001"


def test_token_is_required_on_v1_but_not_on_health_and_metrics(
        live: Callable[..., Live]) -> None:
    handle = live(token="s3cret")
    import httpx

    with httpx.Client(base_url=handle.url) as anonymous:
        assert anonymous.get("/v1/jobs").status_code == 401
        wrong = anonymous.get("/v1/jobs", headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "token" in wrong.json()["detail"]
        assert anonymous.post("/v1/jobs", json={}).status_code == 401
        assert anonymous.get("/healthz").json()["status"] == "ok"
        assert anonymous.get("/metrics").status_code == 200
    assert handle.http.get("/v1/jobs").status_code == 200


def test_unknown_jobs_are_404_and_ended_jobs_cannot_be_cancelled(
        live: Callable[..., Live]) -> None:
    client = live().http
    assert client.get("/v1/jobs/job-9").status_code == 404
    assert client.delete("/v1/jobs/job-9").status_code == 404
    assert client.post("/v1/jobs/job-9/progress", json={"step": 1}).status_code == 404
    job = client.post("/v1/jobs", json={"gpus": 1, "command": ["sleep", "30"]}).json()["id"]
    assert client.delete(f"/v1/jobs/{job}").json()["status"] == "cancelled"
    second = client.delete(f"/v1/jobs/{job}")
    assert second.status_code == 409 and "already ended (cancelled)" in second.text


def test_openapi_lists_the_contract(live: Callable[..., Live]) -> None:
    paths = live().http.get("/openapi.json").json()["paths"]
    for path in ("/v1/jobs", "/v1/jobs/{job_id}", "/v1/cluster", "/v1/queues", "/healthz",
                 "/metrics", "/v1/jobs/{job_id}/events", "/v1/jobs/{job_id}/logs",
                 "/v1/jobs/{job_id}/progress"):
        assert path in paths, path


def test_metrics_are_prometheus_text(live: Callable[..., Live]) -> None:
    client = live().http
    client.post("/v1/jobs", json={"gpus": 4, "command": ["sleep", "30"]})
    client.post("/v1/jobs", json={"gpus": 4, "command": ["sleep", "30"]})
    text = client.get("/metrics").text
    for name in ("dlsched_queue_length", "dlsched_running_jobs", "dlsched_gpus_allocated",
                 "dlsched_cycle_seconds_bucket", "dlsched_preemptions_total",
                 'dlsched_gpus{gpu_type="T4"} 4.0'):
        assert name in text, name


def test_cluster_view_carries_what_the_scheduler_accounts(live: Callable[..., Live]) -> None:
    """``/v1/cluster`` gives each node's CPUs, memory, rack, NVLink domain and pool, and the
    link bandwidths: ``dlsched history cluster`` writes a cluster the simulator schedules as
    the service does (it wrote GPU types and counts only: a replay left CPUs and memory
    unaccounted)."""
    from dlsched.cluster.loader import parse_cluster_yaml
    from dlsched.runtime.models import ClusterView
    from dlsched.whatif.cluster import cluster_yaml

    text = ("name: lab\ntopology: {rack_gbps: 25}\nnodes:\n"
            "  - {name: a, gpu_type: A100, gpus: 4, cpus: 32, memory_gb: 256, rack: r1,"
            " nvlink_domain: 4, pool: big}\n"
            "  - {name: b, gpu_type: T4, gpus: 2, cpus: 8, memory_gb: 64, gpu_memory_gb: 15}\n")
    served = parse_cluster_yaml(text, "lab.yaml")
    body = live(cluster=served).http.get("/v1/cluster").json()
    assert [(n["cpus"], n["memory_gb"], n["gpu_memory_gb"], n["rack"], n["pool"])
            for n in body["nodes"]] == [(32, 256, 40, "r1", "big"), (8, 64, 15, "rack-0", None)]
    replayed = parse_cluster_yaml(cluster_yaml(ClusterView.model_validate(body)), "out.yaml")
    assert replayed.topology == served.topology
    for name in ("node_cpus", "node_memory_gb", "gpu_memory_gb", "node_rack", "gpu_node"):
        assert getattr(replayed, name).tolist() == getattr(served, name).tolist(), name
    assert [(n.nvlink_domain, n.pool) for n in replayed.nodes] == [(4, "big"), (0, None)]


@pytest.mark.parametrize(("path", "params", "message"), [
    pytest.param("/v1/jobs", {"statu": "pending"},
                 "unknown query parameter 'statu'; did you mean 'status'? (this endpoint takes: "
                 "limit, offset, queue, status, submitted_by)", id="typo-in-a-filter"),
    pytest.param("/v1/cluster", {"verbose": "1"},
                 "unknown query parameter 'verbose' (this endpoint takes: none)",
                 id="endpoint-without-parameters"),
    pytest.param("/v1/jobs/job-000001/logs", {"max_byte": "10"},
                 "unknown query parameter 'max_byte'; did you mean 'max_bytes'?",
                 id="typo-beside-a-path-parameter"),
])
def test_an_unknown_query_parameter_is_a_400_naming_it(
        live: Callable[..., Live], path: str, params: dict[str, str], message: str) -> None:
    """A mistyped filter listed every job (``?statu=pending``), as if it had matched."""
    response = live().http.get(path, params=params)
    assert response.status_code == 400
    assert message in response.json()["detail"]


@pytest.mark.parametrize(("given", "hint"), [
    pytest.param("runing", "; did you mean 'running'?", id="typo"),
    pytest.param("RUNNING", "; did you mean 'running'?", id="upper-case"),
    pytest.param("finsihed", "; did you mean 'finished'?", id="swapped-letters"),
    pytest.param("xyzzy", "", id="nothing-close"),
])
def test_a_mistyped_status_filter_names_the_closest_state(
        live: Callable[..., Live], given: str, hint: str) -> None:
    """``?status=runing`` was pydantic's 422 listing the states and no closest one, which
    ``dlsched jobs --status runing`` names; still a 422 of pydantic's shape."""
    response = live().http.get("/v1/jobs", params={"status": given})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert (error["loc"], error["input"]) == (["query", "status"], given)
    assert error["msg"] == ("Input should be 'pending', 'running', 'preempted', 'finished', "
                            "'failed' or 'cancelled'" + hint)


def test_query_parameters_the_endpoint_takes_and_client_underscores_pass(
        live: Callable[..., Live]) -> None:
    client = live().http
    client.post("/v1/jobs", json={"gpus": 1, "command": ["sleep", "30"]})
    listed = client.get("/v1/jobs", params={"status": "running", "limit": 5, "_": "1712"})
    assert listed.status_code == 200
    assert client.get("/v1/utilization", params={"hours": 1, "points": 4}).status_code == 200
