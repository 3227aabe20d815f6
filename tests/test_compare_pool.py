"""A comparison's policies on worker processes (dlsched/compare_pool.py): the same files as
one after another, the lines in the policies' order, progress from each worker, a failed run
named."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

import dlsched
from dlsched import compare_pool
from dlsched.cli import app
from dlsched.cluster.builtin import resolve_cluster
from dlsched.errors import ConfigError
from dlsched.experiment import load_trace
from dlsched.run_config import RunConfig

POLICIES = ("fifo", "srtf", "tiresias")
FILES = ("jobs.csv", "timeline.csv", "segments.csv", "config.yaml")
TIMING = {"wall_seconds", "cycle_ms_mean"}  # measured, not simulated
runner = CliRunner()
forks = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                           reason="workers see this test's patches only when forked")


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers forked even if an earlier test left a thread in this process (the default
    would then use a fork server, whose workers do not see this test's patches)."""
    monkeypatch.setattr(compare_pool, "pool_context",
                        lambda: multiprocessing.get_context("fork"))


def compare(out: Path, workers: int, policies: str = ",".join(POLICIES)) -> str:
    result = runner.invoke(app, ["compare", "--trace", "pollux-1", "--cluster", "pollux-64",
                                 "--policies", policies, "--out", str(out),
                                 "--workers", str(workers)])
    assert result.exit_code == 0, result.output
    return result.output


def untimed(path: Path) -> dict[str, object]:
    return {k: v for k, v in json.loads(path.read_text()).items() if k not in TIMING}


def test_workers_write_the_same_files_as_one_after_another(tmp_path: Path) -> None:
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    compare(serial, workers=1)
    printed = compare(parallel, workers=3)
    for policy in POLICIES:
        for name in FILES:  # config.yaml names its own --out
            assert ((parallel / policy / name).read_text().replace(str(parallel), "OUT")
                    == (serial / policy / name).read_text().replace(str(serial), "OUT")), (
                policy, name)
        assert untimed(parallel / policy / "summary.json") == untimed(
            serial / policy / "summary.json")
    both = [json.loads((out / "summary.json").read_text()) for out in (serial, parallel)]
    assert [sorted(b) for b in both] == [sorted(POLICIES)] * 2
    assert (parallel / "report.html").exists()
    lines = [printed.index(f"{policy}: 160/160 finished") for policy in POLICIES]
    assert lines == sorted(lines)  # in the policies' order, whichever finished first


def test_one_worker_or_one_policy_runs_in_this_process(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("no worker process expected")

    monkeypatch.setattr(compare_pool, "run_policies", no_pool)
    compare(tmp_path / "one-worker", workers=1)
    compare(tmp_path / "one-policy", workers=4, policies="fifo")


@forks
@pytest.mark.usefixtures("forked")
def test_a_failed_run_is_named_and_ends_the_command(monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    import dlsched.experiment

    real = dlsched.experiment.run_policy

    def failing(config: RunConfig, policy: str, *args: object, **kwargs: object) -> object:
        if policy == "srtf":
            raise ConfigError("job 7: no rate for this GPU")
        return real(config, policy, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(dlsched.experiment, "run_policy", failing)  # forked workers see it
    result = runner.invoke(app, ["compare", "--trace", "pollux-1", "--cluster", "pollux-64",
                                 "--policies", "fifo,srtf", "--out", str(tmp_path),
                                 "--workers", "2"])
    assert result.exit_code == 2
    assert "error: srtf: job 7: no rate for this GPU" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("start", ["default", "forkserver"])
def test_each_worker_reports_progress_and_its_outcome(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path, start: str) -> None:
    """Forked workers inherit the trace; from a fork server it is sent to them."""
    if start != "default":
        if start not in multiprocessing.get_all_start_methods():
            pytest.skip(f"no {start} on this platform")
        monkeypatch.setattr(compare_pool, "pool_context",
                            lambda: multiprocessing.get_context(start))
    config = RunConfig(trace="pollux-1", cluster="pollux-64", policies=POLICIES,
                       out=str(tmp_path))
    cluster = resolve_cluster(config.cluster)
    trace = load_trace(config, cluster)
    progressed: set[str] = set()
    done: list[str] = []
    outcomes = compare_pool.run_policies(
        config, POLICIES, trace, cluster, lambda policy: tmp_path / policy, 2,
        lambda policy, progress: progressed.add(policy),
        lambda policy, outcome: done.append(policy))
    assert [o.summary.policy for o in outcomes] == list(POLICIES)
    assert progressed == set(POLICIES)  # each run reports at least once, at its end
    assert sorted(done) == sorted(POLICIES)
    assert all(o.summary.jobs_finished == 160 for o in outcomes)


def test_notebook_compare_with_workers_gives_the_same_table(tmp_path: Path) -> None:
    tables = [dlsched.compare("pollux-1", "pollux-64", ["fifo", "tiresias"], workers=w).summary
              for w in (1, 2)]
    kept = [c for c in tables[0].columns if c not in TIMING]
    assert tables[0][kept].equals(tables[1][kept])


@pytest.mark.parametrize(("policies", "cpus", "expected"), [
    (1, 8, 1), (3, 8, 3), (8, 2, 2), (5, 1, 1)])
def test_default_workers_one_per_policy_at_most_one_per_cpu(
        monkeypatch: pytest.MonkeyPatch, policies: int, cpus: int, expected: int) -> None:
    monkeypatch.setattr(compare_pool.os, "sched_getaffinity", lambda pid: set(range(cpus)),
                        raising=False)
    assert compare_pool.default_workers(policies) == expected


def test_workers_are_forked_only_from_a_process_without_other_threads() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    alone = compare_pool.pool_context().get_start_method()
    other.start()
    try:
        crowded = compare_pool.pool_context().get_start_method()
    finally:
        stop.set()
        other.join()
    assert crowded != "fork"
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        assert alone == "fork"


def test_workers_below_one_is_refused(tmp_path: Path) -> None:
    result = runner.invoke(app, ["compare", "--trace", "pollux-1", "--cluster", "pollux-64",
                                 "--policies", "fifo,srtf", "--out", str(tmp_path),
                                 "--workers", "0"])
    assert result.exit_code == 2 and "--workers: at least 1, got 0" in result.output


def test_a_worker_caps_its_blas_threads_at_its_share_of_the_cpus() -> None:
    """Two workers with a BLAS thread per CPU each, on two cores, took 2-4x the CPU of one
    process (threads busy-waiting between numpy calls)."""
    from threadpoolctl import threadpool_info, threadpool_limits

    before = {i["filepath"]: i["num_threads"] for i in threadpool_info()}
    environment = dict(os.environ)
    try:
        compare_pool.share_cpus(compare_pool.available_cpus())
        assert all(i["num_threads"] == 1 for i in threadpool_info())
        # pools a worker loads later (scipy's OpenBLAS) read the cap as they load
        assert all(os.environ[name] == "1" for name in compare_pool.BLAS_THREADS)
    finally:
        os.environ.clear()
        os.environ.update(environment)
        for path, threads in before.items():
            threadpool_limits(limits={path: threads})
    assert {i["filepath"]: i["num_threads"] for i in threadpool_info()} == before



def test_a_warning_of_the_runs_is_printed_as_by_the_serial_loop(tmp_path: Path) -> None:
    """A job that crawls under failures (the same in every policy's run: one job, alone) is
    warned of once per command, before the first policy's line, as one after another; each
    worker printed it (once per policy) before session 34. The command as a user runs it (its
    entry point prints warnings as lines; CliRunner's does not)."""
    import subprocess
    import sys

    trace, cluster, failures = (tmp_path / name for name in ("t.csv", "c.yaml", "f.yaml"))
    trace.write_text("job_id,submit_time,num_gpus,duration,queue\nj,0,4,31000,default\n")
    cluster.write_text("name: two\nnode_groups: [{count: 2, gpus: 4, gpu_type: V100}]\n")
    failures.write_text("categories: [{name: gpu, rate_per_gpu_day: 10.0, "
                        "repair_hours: 0.01}]\n")

    def printed(workers: int) -> list[str]:
        out = tmp_path / str(workers)
        result = subprocess.run([
            sys.executable, "-m", "dlsched", "compare", "--trace", str(trace), "--cluster",
            str(cluster), "--policies", "fifo,sjf,srtf", "--failures", str(failures),
            "--checkpoint", "15110", "--checkpoint-cost", "10", "--restart-overhead", "0",
            "--workers", str(workers), "--out", str(out)], capture_output=True, text=True,
            check=True)
        return [line.split(", simulated in")[0].replace(str(out), "OUT")
                for line in (result.stdout + result.stderr).splitlines()]

    serial = printed(1)
    assert [line.startswith("warning: job j (4 GPUs) crawls") for line in serial[1:3]] == [
        True, False], serial
    assert printed(3) == serial
