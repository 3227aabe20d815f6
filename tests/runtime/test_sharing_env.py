"""What a fractional, MIG or CPU-asking job's workers get (``executors/sharing.py``): the
environment a device plugin would set, and the Ray bundle. CPU-only: the variables and the Ray
resource requests are checked, not CUDA."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from runtime_helpers import kill_strays, records, wait_for, worker

from dlsched.cluster.cluster import Cluster, Node
from dlsched.runtime.executors.local import LaunchPlan, LocalExecutor, LocalSettings, Outcome
from dlsched.runtime.executors.sharing import MigSlot, Sharing, add_sharing_env, mig_uuid
from dlsched.workload.job import HostShare, Job, JobSpec

CLUSTER = Cluster("mixed", (Node("t4", "T4", 2), Node("a100", "A100", 2)))  # 16 / 40 GB


def job(**fields: object) -> Job:
    return Job(JobSpec("j", 0.0, 1, 100.0, **fields))  # type: ignore[arg-type]


def test_a_whole_gpu_job_gets_nothing_new() -> None:
    assert Sharing.of(job()) is None
    assert add_sharing_env({"A": "1"}, None, CLUSTER, 0, 0) == {"A": "1"}


def test_a_fraction_gets_the_mps_thread_percentage_and_its_share_of_memory() -> None:
    env = Sharing.of(job(gpu_share=0.25)).env(CLUSTER, 1, 0)  # type: ignore[union-attr]
    assert env == {"DLSCHED_GPU_SHARE": "0.25", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "25",
                   "DLSCHED_GPU_MEMORY_GB": "4", "DLSCHED_GPU_MEMORY_FRACTION": "0.25",
                   "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=4096M"}


def test_asked_gpu_memory_is_the_limit_as_a_fraction_of_that_gpus_memory() -> None:
    sharing = Sharing.of(job(gpu_share=0.5, gpu_memory_gb=10.0))
    assert sharing is not None
    on_a100 = sharing.env(CLUSTER, 2, 0)
    assert on_a100["DLSCHED_GPU_MEMORY_FRACTION"] == "0.25"  # 10 of 40 GB
    assert on_a100["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] == "0=10240M"
    whole = Sharing.of(job(gpu_memory_gb=8.0)).env(CLUSTER, 0, 0)  # type: ignore[union-attr]
    assert whole["DLSCHED_GPU_MEMORY_FRACTION"] == "0.5"
    assert "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE" not in whole  # a whole GPU: no MPS


def test_cpus_per_gpu_set_omp_threads_unless_the_job_sets_them() -> None:
    sharing = Sharing.of(job(cpus_per_gpu=3.5, memory_gb_per_gpu=12.0))
    env = add_sharing_env({}, sharing, CLUSTER, 0, 0)
    assert env["DLSCHED_CPUS"] == "3.5" and env["OMP_NUM_THREADS"] == "3"
    assert env["DLSCHED_MEMORY_GB"] == "12"
    own = add_sharing_env({"OMP_NUM_THREADS": "8"}, sharing, CLUSTER, 0, 0,
                          {"OMP_NUM_THREADS": "8"})
    assert own["OMP_NUM_THREADS"] == "8"
    synergy = Job(JobSpec("s", 0.0, 1, 100.0, cpus_per_gpu=3.0))
    synergy.host = HostShare(6.0, 50.0)  # a policy's allocation wins over the spec's ask
    assert Sharing.of(synergy).env(CLUSTER, 0, 0)["DLSCHED_CPUS"] == "6"  # type: ignore[union-attr]


def test_a_mig_worker_sees_its_instance_by_uuid_and_no_mps() -> None:
    slot = MigSlot("3g.20gb", 4)
    sharing = Sharing.of(job(mig_profile="3g.20gb", gpu_share=3 / 7), (slot,))
    assert sharing is not None
    env = sharing.env(CLUSTER, 3, 0)
    assert re.fullmatch(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                        env["CUDA_VISIBLE_DEVICES"])
    assert env["DLSCHED_MIG_PROFILE"] == "3g.20gb" and env["DLSCHED_MIG_START"] == "4"
    assert not any(name.startswith("CUDA_MPS") for name in env)
    assert env["CUDA_VISIBLE_DEVICES"] == mig_uuid(CLUSTER, 3, slot)  # stable per instance
    assert mig_uuid(CLUSTER, 3, MigSlot("3g.20gb", 0)) != env["CUDA_VISIBLE_DEVICES"]
    assert mig_uuid(CLUSTER, 2, slot) != env["CUDA_VISIBLE_DEVICES"]


@pytest.mark.parametrize(("fields", "mig", "bundle"), [
    pytest.param({}, (), None, id="whole-gpu"),
    pytest.param({"gpu_share": 0.25}, (), {"GPU": 0.25}, id="fraction"),
    pytest.param({"gpu_share": 1 / 3}, (), {"GPU": 0.3333}, id="fraction-rounded"),
    pytest.param({"cpus_per_gpu": 4.0, "memory_gb_per_gpu": 2.0}, (),
                 {"GPU": 1.0, "CPU": 4.0, "memory": 2.0 * 2**30}, id="cpus-memory"),
    pytest.param({"mig_profile": "3g.20gb", "gpu_share": 3 / 7}, (MigSlot("3g.20gb", 0),),
                 {"mig-3g.20gb": 1.0, "GPU": 0.4286}, id="mig"),
])
def test_ray_bundles_ask_fractional_gpus_and_mig_resources(
        fields: dict, mig: tuple[MigSlot, ...], bundle: dict | None) -> None:
    sharing = Sharing.of(job(**fields), mig)
    assert (None if sharing is None else sharing.ray_bundle()) == bundle


def test_the_local_executor_gives_two_fractions_of_one_gpu_their_env(
        tmp_path: Path, out: Path) -> None:
    def plan(job_id: str) -> LaunchPlan:
        return LaunchPlan(1, tuple(worker("sleep", out, 0)), str(tmp_path / job_id / "ckpt"),
                          tmp_path / job_id / "attempt-1.log", env={"OMP_NUM_THREADS": "2"})

    executor = LocalExecutor(CLUSTER, plan, LocalSettings(2.0, "http://x:1", None))
    try:
        for job_id, share in (("a", 0.5), ("b", 0.25)):
            one = Job(JobSpec(job_id, 0.0, 1, 100.0, gpu_share=share, cpus_per_gpu=1.0))
            one.allocation, one.shares = (3,), (share,)  # the same A100 (index 1 of a100)
            executor.start(one, 0.0)
        ends: list = []
        wait_for(lambda: ends.extend(executor.poll()) or len(ends) == 2, 20, "both to end")
        assert {e.outcome for e in ends} == {Outcome.SUCCEEDED}
        a, b = records(out, "a")[0], records(out, "b")[0]
    finally:
        executor.drain(0.1)
        kill_strays(tmp_path)
    assert a["CUDA_VISIBLE_DEVICES"] == b["CUDA_VISIBLE_DEVICES"] == "1"
    assert (a["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], b["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"]) == (
        "50", "25")
    assert (a["DLSCHED_GPU_MEMORY_GB"], b["DLSCHED_GPU_MEMORY_GB"]) == ("20", "10")
    assert a["DLSCHED_CPUS"] == "1" and a["OMP_NUM_THREADS"] == "2"  # the job's own wins
