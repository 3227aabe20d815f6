"""``max_per_node`` and ``group`` in the service: replicas of a group spread over nodes (the
consolidated placement would stack them), the job shows them, a bad value is a 4xx naming the
field, and a restarted service rebuilds the cap from its database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from runtime_helpers import Live, wait_for, worker

from dlsched.cluster.cluster import Cluster, Node
from dlsched.runtime.recovery import _spec
from dlsched.runtime.store import JobRow

TWO_NODES = Cluster("two", (Node("a", "T4", 2), Node("b", "T4", 2)))


def test_a_groups_replicas_spread_over_nodes(live: Callable[..., Live], out: Path) -> None:
    handle = live(cluster=TWO_NODES)
    replica = {"gpus": 1, "group": "svc", "max_per_node": 1,
               "command": worker("sleep", out, 30)}
    ids = []
    for _ in range(2):
        response = handle.http.post("/v1/jobs", json=replica)
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])

    def running() -> list[dict]:
        details = [handle.http.get(f"/v1/jobs/{i}").json() for i in ids]
        return details if all(d["status"] == "running" for d in details) else []

    details = wait_for(running, 15, "both replicas to run")
    assert sorted(d["allocation"][0]["gpu"] for d in details) == [0, 2]  # nodes a and b
    assert all(d["max_per_node"] == 1 and d["group"] == "svc" for d in details)
    for job_id in ids:
        handle.http.delete(f"/v1/jobs/{job_id}")


def test_bad_caps_are_refused_naming_the_field(live: Callable[..., Live]) -> None:
    client = live(cluster=TWO_NODES).http
    negative = client.post("/v1/jobs", json={"gpus": 1, "command": ["true"],
                                             "max_per_node": -1})
    assert negative.status_code == 422 and "max_per_node" in negative.text
    too_wide = client.post("/v1/jobs", json={"gpus": 3, "command": ["true"],
                                             "max_per_node": 1})
    assert too_wide.status_code == 400, too_wide.text
    assert too_wide.json()["detail"].startswith(
        "gpus=3: this cluster can give one job at most 2 GPUs with max_per_node=1")
    assert client.get("/v1/jobs").json() == []


def test_a_restored_job_keeps_its_cap() -> None:
    row = JobRow(id="job-000001", seq=1, num_gpus=2, queue="default", priority=0,
                 submit_time=5.0, gpu_share=1.0, gpu_memory_gb=0.0, cpus_per_gpu=0.0,
                 memory_gb_per_gpu=0.0, max_per_node=1, density_group="svc")
    spec = _spec(row)
    assert (spec.max_per_node, spec.group, spec.density_group) == (1, "svc", "svc")


def test_the_cli_submits_a_cap(live: Callable[..., Live], out: Path) -> None:
    from test_runtime_cli import cli

    url = live(cluster=TWO_NODES).url
    code, text = cli(url, "submit", "--gpus", "2", "--max-per-node", "1", "--group", "svc",
                     "--", *worker("sleep", out, 0))
    assert code == 0, text
    job_id = text.strip()
    wait_for(lambda: "finished" in cli(url, "jobs", job_id)[1], 15, "the job to finish")
    code, shown = cli(url, "jobs", job_id)
    assert "at most 1 per node of group svc" in " ".join(shown.split())  # wrapped at 80
    code, text = cli(url, "jobs", job_id, "--json")
    assert '"max_per_node": 1' in text and '"group": "svc"' in text
