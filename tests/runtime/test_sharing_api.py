"""The job API and CLI take the sharing fields (gpu_share, gpu_memory_gb, mig_profile,
cpus_per_gpu, memory_gb_per_gpu): an impossible request is a 4xx naming the field, with
nothing stored; fractions of one GPU run side by side."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import Live, wait_for, worker
from test_runtime_cli import cli

from dlsched.cluster.cluster import Cluster, Node

IMPOSSIBLE = [
    pytest.param({"gpu_share": 1.5}, 422, "gpu_share", id="share-above-1"),
    pytest.param({"gpu_share": 0}, 422, "gpu_share", id="share-0"),
    pytest.param({"gpu_share": -0.5}, 422, "gpu_share", id="share-negative"),
    pytest.param({"gpu_memory_gb": -1}, 422, "gpu_memory_gb", id="negative-memory"),
    pytest.param({"gpu_memory_gb": 17}, 400, "gpu_memory_gb=17: more GiB of GPU memory",
                 id="more-gpu-memory-than-a-t4"),
    pytest.param({"cpus_per_gpu": 1e5}, 400, "cpus_per_gpu=100000: more CPUs than any node",
                 id="more-cpus-than-any-node"),
    pytest.param({"memory_gb_per_gpu": 1e8}, 400, "memory_gb_per_gpu=1e+08: more GiB of host",
                 id="more-memory-than-any-node"),
    pytest.param({"mig_profile": "3g"}, 400, "mig_profile=3g: this cluster has no MIG-capable",
                 id="mig-on-t4"),
]


@pytest.mark.parametrize(("fields", "status", "message"), IMPOSSIBLE)
def test_impossible_sharing_is_refused_naming_the_field_and_nothing_is_stored(
        live: Callable[..., Live], fields: dict[str, Any], status: int, message: str) -> None:
    client = live().http
    response = client.post("/v1/jobs", json={"gpus": 1, "command": ["true"], **fields})
    assert response.status_code == status, response.text
    assert message in response.text
    assert client.get("/v1/jobs").json() == []


@pytest.mark.parametrize(("fields", "message"), [
    pytest.param({"mig_profile": "5g"}, "mig_profile=5g: no GPU of the cluster offers MIG "
                 "profile '5g': A100 offers 1g.5gb, 2g.10gb", id="unknown-profile"),
    pytest.param({"mig_profile": "3g.40gb"}, "mig_profile=3g.40gb: no GPU of the cluster "
                 "offers", id="an-h100-profile-on-a100s"),
    pytest.param({"mig_profile": "3g", "gpus": 2}, "mig_profile=3g: a MIG job runs one worker",
                 id="two-workers"),
    pytest.param({"mig_profile": "3g", "gpu_share": 0.5}, "gpu_share: a MIG job's share",
                 id="share-and-mig"),
])
def test_impossible_mig_requests_are_refused(live: Callable[..., Live],
                                             fields: dict[str, Any], message: str) -> None:
    client = live(gpus=2, gpu_type="A100").http
    response = client.post("/v1/jobs", json={"gpus": 1, "command": ["true"], **fields})
    assert response.status_code == 400 and message in response.text
    assert client.get("/v1/jobs").json() == []


def _all_running(handle: Live, bodies: list[dict[str, Any]], out: Path,
                 what: str) -> tuple[list[str], list[dict]]:
    """Submit one 30 s sleeping job per body (each accepted with 201) and wait until all of
    them run: their ids and details, in the bodies' order."""
    ids = []
    for body in bodies:
        response = handle.http.post("/v1/jobs", json={**body,
                                                      "command": worker("sleep", out, 30)})
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])

    def running() -> list[dict]:
        details = [handle.http.get(f"/v1/jobs/{i}").json() for i in ids]
        return details if all(d["status"] == "running" for d in details) else []

    return ids, wait_for(running, 15, what)


def test_two_halves_share_one_gpu_and_show_their_share(live: Callable[..., Live],
                                                       out: Path) -> None:
    handle = live(gpus=2)
    half = {"gpus": 1, "gpu_share": 0.5, "gpu_memory_gb": 4, "cpus_per_gpu": 1}
    ids, details = _all_running(handle, [half, half], out, "both halves to run")
    assert [d["allocation"][0]["gpu"] for d in details] == [0, 0]
    assert all(d["allocation"][0]["share"] == 0.5 and d["gpu_share"] == 0.5
               and d["gpu_memory_gb"] == 4 and d["cpus_per_gpu"] == 1 for d in details)
    cluster = handle.http.get("/v1/cluster").json()
    assert cluster["gpus_allocated"] == 1.0
    # Both jobs hold GPU 0: one id per GPU showed only the later one (`dlsched status` too).
    assert cluster["nodes"][0]["gpus"][0]["job_ids"] == ids
    assert f"0:{ids[0]}+{ids[1]}, 1:-" in cli(handle.url, "status")[1]
    for job_id in ids:
        handle.http.delete(f"/v1/jobs/{job_id}")


def test_the_cli_submits_a_fraction_and_shows_the_services_error(
        live: Callable[..., Live], out: Path) -> None:
    url = live().url
    code, text = cli(url, "submit", "--gpus", "1", "--gpu-share", "0.25", "--cpus-per-gpu",
                     "1", "--gpu-memory-gb", "2", "--", *worker("sleep", out, 0))
    assert code == 0, text
    job_id = text.strip()
    wait_for(lambda: "finished" in cli(url, "jobs", job_id)[1], 15, "the job to finish")
    code, text = cli(url, "jobs", job_id, "--json")
    assert '"gpu_share": 0.25' in text and '"gpu_memory_gb": 2.0' in text
    records = sorted(out.glob(f"{job_id}-a1-r0.json"))
    assert records and '"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25"' in records[0].read_text()
    # --gpus 0.5 is one worker on half a GPU; the listing shows the share.
    code, text = cli(url, "submit", "--gpus", "0.5", "--", *worker("sleep", out, 0))
    assert code == 0, text
    half = handle_job(url, text.strip())
    assert (half["gpus"], half["gpu_share"]) == (1, 0.5)
    listed = [row for row in cli(url, "jobs")[1].splitlines() if text.strip() in row]
    assert listed and "│ 0.5 " in listed[0], listed
    # A job file's gpus: 0.5 reads the same (it was a 422 "valid integer").
    job_file = out / "half.yaml"
    job_file.write_text("gpus: 0.5\ncommand: [\"true\"]\n")
    code, text = cli(url, "submit", "--file", str(job_file))
    assert code == 0, text
    assert (handle_job(url, text.strip())["gpus"], handle_job(url, text.strip())["gpu_share"]
            ) == (1, 0.5)
    code, text = cli(url, "submit", "--gpus", "1", "--gpu-share", "2", "--", "true")
    assert code == 1 and "gpu_share" in text
    code, text = cli(url, "submit", "--gpus", "1", "--mig-profile", "9g", "--", "true")
    assert code == 1 and "mig_profile=9g" in text


def handle_job(url: str, job_id: str) -> dict[str, Any]:
    code, text = cli(url, "jobs", job_id, "--json")
    assert code == 0, text
    return json.loads(text)


def test_mig_jobs_run_on_instances_of_one_gpu_and_see_their_uuid(
        live: Callable[..., Live], out: Path) -> None:
    handle = live(gpus=2, gpu_type="A100")
    ids, (four, three, whole) = _all_running(
        handle, [{"gpus": 1, "mig_profile": "4g"}, {"gpus": 1, "mig_profile": "3g.20gb"},
                 {"gpus": 1}], out, "the three jobs to run")
    # MIG-aware: the 3g goes beside the 4g (slices 4-7), the whole-GPU job to the other GPU.
    assert [s["mig_instance"] for s in (four["allocation"][0], three["allocation"][0])] == [
        "4g.20gb@0", "3g.20gb@4"]
    assert four["allocation"][0]["gpu"] == three["allocation"][0]["gpu"] == 0
    assert whole["allocation"][0]["gpu"] == 1 and whole["mig_profile"] is None
    assert three["mig_profile"] == "3g.20gb" and abs(three["gpu_share"] - 3 / 7) < 1e-9
    envs = [wait_for(lambda i=i: sorted(out.glob(f"{i}-a1-r0.json")), 15, "a record")[0]
            .read_text() for i in ids]
    assert '"CUDA_VISIBLE_DEVICES": "MIG-' in envs[0] and '"CUDA_VISIBLE_DEVICES": "MIG-' in envs[1]
    assert envs[0] != envs[1] and '"CUDA_VISIBLE_DEVICES": "1"' in envs[2]
    assert '"DLSCHED_MIG_PROFILE": "3g.20gb"' in envs[1]
    for job_id in ids:
        handle.http.delete(f"/v1/jobs/{job_id}")


def test_mig_jobs_use_every_mig_type_of_a_mixed_cluster(live: Callable[..., Live],
                                                        out: Path) -> None:
    """On A100 and H100 nodes (the A100 listed first) an H100 profile was refused ("unknown
    MIG profile '3g.40gb' on a100") and a size alone (7g) became the A100's 7g.40gb, so a
    second 7g waited for the A100 to drain beside an idle H100."""
    cluster = Cluster("mixed", (Node("a", "A100", 1), Node("h", "H100", 1)))
    handle = live(cluster=cluster)
    ids, details = _all_running(handle, [{"gpus": 1, "mig_profile": "7g"},
                                         {"gpus": 1, "mig_profile": "7g"}], out,
                                "a 7g on each GPU")
    assert sorted(d["allocation"][0]["mig_instance"] for d in details) == [
        "7g.40gb@0", "7g.80gb@0"]
    assert all(d["mig_profile"] == "7g" and d["gpu_share"] == 1.0 for d in details)
    for job_id in ids:
        handle.http.delete(f"/v1/jobs/{job_id}")
    wait_for(lambda: handle.http.get("/v1/cluster").json()["gpus_allocated"] == 0, 15,
             "the GPUs to be given back")
    _, (h100,) = _all_running(handle, [{"gpus": 1, "mig_profile": "3g.40gb"}], out,
                              "the H100 profile to run")
    assert h100["allocation"][0]["node"] == "h" and h100["mig_profile"] == "3g.40gb"


def _scraped(text: str) -> dict[str, float]:
    """``/metrics``' GPU gauges, summed over the GPU types: name -> value."""
    from prometheus_client.parser import text_string_to_metric_families

    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if "gpu_type" in sample.labels:
                sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
    return sums


def test_cluster_and_metrics_count_mig_and_fractions_alike(live: Callable[..., Live],
                                                           out: Path) -> None:
    """A GPU in MIG mode counted as one whole GPU allocated in ``/v1/cluster`` (the core's
    booking) but as its slices / 7 in ``/metrics``: the two disagreed (1 + 0.5 + 1 against
    3/7 + 0.5 + 1 here). Both give the shares now, and the GPUs in use and slices beside."""
    handle = live(gpus=3, gpu_type="A100")
    ids, _ = _all_running(handle, [{"gpus": 1, "mig_profile": "3g"},
                                   {"gpus": 1, "gpu_share": 0.5}, {"gpus": 1}], out,
                          "the MIG, half and whole jobs to run")
    cluster = handle.http.get("/v1/cluster").json()
    scraped = _scraped(handle.http.get("/metrics").text)
    assert cluster["gpus_allocated"] == pytest.approx(3 / 7 + 0.5 + 1, abs=1e-6)
    assert scraped["dlsched_gpus_allocated"] == pytest.approx(cluster["gpus_allocated"])
    assert (cluster["gpus_in_use"], cluster["gpus_partly_used"]) == (3, 2)
    assert (cluster["mig_slices_used"], cluster["mig_slices"]) == (3, 21)
    assert [scraped[f"dlsched_{name}"] for name in (
        "gpus_in_use", "gpus_partly_used", "mig_slices_used", "mig_slices", "gpus")] == [
        3, 2, 3, 21, 3]
    queues = handle.http.get("/v1/queues").json()
    assert sum(q["gpus_allocated"] for q in queues) == pytest.approx(cluster["gpus_allocated"])
    assert "1.92857/3 GPUs allocated (3 in use, 2 partly, MIG slices 3/21)" in cli(
        handle.url, "status")[1]
    for job_id in ids:
        handle.http.delete(f"/v1/jobs/{job_id}")
