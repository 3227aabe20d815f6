"""Kubernetes Jobs and Kueue Workloads exported as JSON: GPUs, times, queues; errors located at
``file:line:items[i].field``."""

from __future__ import annotations

import json

import pytest
from reader_checks import Writer, expect_error

from dlsched.workload.readers import read_trace

JOB = {"apiVersion": "batch/v1", "kind": "Job",
       "metadata": {"name": "train-a", "namespace": "team-a",
                    "creationTimestamp": "2026-11-02T10:00:00Z",
                    "labels": {"kueue.x-k8s.io/queue-name": "team-a-queue"}},
       "spec": {"parallelism": 2, "template": {"spec": {
           "nodeSelector": {"nvidia.com/gpu.product": "A100"},
           "containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": "4"}}}]}}},
       "status": {"startTime": "2026-11-02T10:05:00Z",
                  "completionTime": "2026-11-02T11:05:00Z"}}
WORKLOAD = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "job-eval-1", "namespace": "team-b",
                         "creationTimestamp": "2026-11-02T10:10:00Z"},
            "spec": {"queueName": "team-b-queue", "podSets": [{"name": "main", "count": 3,
                     "template": {"spec": {"containers": [
                         {"name": "c", "resources": {"requests": {"nvidia.com/gpu": 1}}}]}}}]},
            "status": {"conditions": [
                {"type": "Admitted", "status": "True",
                 "lastTransitionTime": "2026-11-02T10:12:00Z"},
                {"type": "Finished", "status": "True", "reason": "Succeeded",
                 "lastTransitionTime": "2026-11-02T10:42:00Z"}]}}
PENDING = {"kind": "Job", "metadata": {"name": "p", "creationTimestamp": "2026-11-02T10:20:00Z"},
           "spec": {"template": {"spec": {"containers": []}}}, "status": {}}


def listing(*items: dict) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(items)}, indent=2)


def error_at(write: Writer, text: str, marker: str, fmt: str | None, field: str) -> None:
    """Reading ``text`` fails at the first line holding ``marker``, naming ``field``."""
    line = next(i for i, t in enumerate(text.splitlines(), 1) if marker in t)
    expect_error(write("bad.json", text), fmt, line, field)


def test_jobs_and_workloads_become_jobs(write: Writer) -> None:
    trace = read_trace(write("jobs.json", listing(JOB, WORKLOAD, PENDING)))
    assert trace.format == "kubernetes-json"
    assert [(j.job_id, j.submit_time, j.num_gpus, j.work, j.queue, j.gpu_types)
            for j in trace.jobs] == [
        ("team-a/train-a", 0.0, 8, 3600.0, "team-a-queue", ("A100",)),
        ("team-b/job-eval-1", 600.0, 3, 1800.0, "team-b-queue", ())]
    assert trace.warnings[0] == f"{trace.source}: dropped 1 row: never started"
    # What the cluster did with them, to compare a replay with: JCTs 65 and 32 min, waits 5
    # and 2 min, 10:00 to 11:05
    assert trace.skipped == 0 and trace.warnings[1].startswith(
        f"{trace.source}: as recorded, its 2 jobs had a mean JCT of 48.5 min, a mean "
        "queueing delay of 3.5 min and a makespan of 1.08 h")


def test_a_bad_time_names_file_line_and_field(write: Writer) -> None:
    bad = json.loads(json.dumps(JOB))
    bad["status"]["startTime"] = "yesterday"
    text = listing(WORKLOAD, bad)
    error_at(write, text, "yesterday", None, "items[1].status.startTime")


def test_a_bad_gpu_count_names_the_container(write: Writer) -> None:
    bad = json.loads(json.dumps(WORKLOAD))
    bad["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {
        "requests": {"nvidia.com/gpu": "half"}}
    text = listing(bad)
    error_at(write, text, "half", "kubernetes-json", "items[0].spec.podSets[0]."
             "template.spec.containers[0].resources.requests.nvidia.com/gpu")


def test_a_job_that_completes_before_it_starts_is_an_error_not_left_out(write: Writer) -> None:
    # It was dropped as "ran 0 seconds": a bad row lost without an error (Slurm's reader
    # refuses End before Start).
    bad = json.loads(json.dumps(JOB))
    bad["status"]["completionTime"] = "2026-11-02T09:05:00Z"
    text = listing(WORKLOAD, bad)
    error_at(write, text, "09:05:00", None, "items[1].status.completionTime")


def test_a_workload_that_finishes_before_its_admission_is_an_error(write: Writer) -> None:
    bad = json.loads(json.dumps(WORKLOAD))
    bad["status"]["conditions"][1]["lastTransitionTime"] = "2026-11-02T10:02:00Z"
    text = listing(bad)
    error_at(write, text, "10:02:00", None, "items[0].status.conditions[1].lastTransitionTime")


def test_a_count_given_as_true_is_an_error(write: Writer) -> None:
    bad = json.loads(json.dumps(JOB))
    bad["spec"]["parallelism"] = True  # was read as 1 pod
    text = listing(bad)
    error_at(write, text, "true", None, "items[0].spec.parallelism")


def _spread(labels: dict, match: dict, key: str = "kubernetes.io/hostname") -> dict:
    """JOB with pod labels and a required anti-affinity to pods matching ``match``."""
    job = json.loads(json.dumps(JOB))
    template = job["spec"]["template"]
    template["metadata"] = {"labels": labels}
    template["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": key, "labelSelector": {"matchLabels": match}}]}}
    return job


def test_self_anti_affinity_caps_pods_per_node(write: Writer) -> None:
    """Two pods of 4 GPUs kept one per node: at most 4 of the group's GPUs on a node."""
    one = read_trace(write("a.json", listing(_spread({"app": "x", "tier": "1"}, {"app": "x"}))))
    (spec,) = one.jobs
    assert (spec.num_gpus, spec.group, spec.max_per_node) == (8, "k8s:app=x", 4)
    # a selector its own pods do not match, or another topology key: not modelled
    for job in (_spread({"app": "y"}, {"app": "x"}),
                _spread({"app": "x"}, {"app": "x"}, "topology.kubernetes.io/zone")):
        (plain,) = read_trace(write("b.json", listing(job))).jobs
        assert (plain.group, plain.max_per_node) == (None, 0)


def _mig_job(name: str, pods: int, profile: str) -> dict:
    job = json.loads(json.dumps(JOB))
    job["metadata"]["name"] = name
    job["spec"]["parallelism"] = pods
    job["spec"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {f"nvidia.com/mig-{profile}": 1}}
    return job


def test_a_mig_instance_is_a_mig_job(write: Writer) -> None:
    """A pod asking ``nvidia.com/mig-3g.20gb: 1`` (the device plugin's mixed strategy) was
    left out as "no GPUs"; one worker on one instance is now a MIG job (docs/mig.md), several
    are left out under their own reason."""
    trace = read_trace(write("jobs.json", listing(_mig_job("one", 1, "3g.20gb"),
                                                  _mig_job("four", 4, "1g.5gb"))))
    (job,) = trace.jobs
    assert (job.job_id, job.num_gpus, job.mig_profile, job.gpu_share) == (
        "team-a/one", 1, "3g.20gb", pytest.approx(3 / 7))
    assert any("MIG instances for several workers" in w for w in trace.warnings)


def test_an_unknown_mig_profile_names_the_field(write: Writer) -> None:
    text = listing(_mig_job("odd", 1, "5g.99gb"))
    error_at(write, text, "5g.99gb", None,
             "items[0].spec.template.spec.containers[0].resources.limits.nvidia.com/mig-5g.99gb")
