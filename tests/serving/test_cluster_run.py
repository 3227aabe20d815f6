"""``serving/cluster_run.py``: service replicas as jobs the core places, served from when the
core started them."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from serving_helpers import azure_csv
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.serving.cluster_run import replica_runs
from dlsched.serving.routing import Schedule
from dlsched.sim.result import JobRecord

runner = CliRunner()

SERVICE = """services:
  - name: chat
    model: llama2-70b
    gpu: A100-80G
    tensor_parallel: 8
    {size}
    slo: {{ttft_ms: 2500, tpot_ms: 150}}
    trace: reqs.csv
"""
STATIC = "replicas: 1"
AUTOSCALED = "autoscaling: {min: 1, max: 2, interval_s: 2, target_outstanding: 1}"
DISAGGREGATED = ("replicas: 1\n    disaggregation: {prefill_replicas: 1, "
                 "prefill_gpu: A100-80G}")


def _run(tmp_path: Path, size: str, gpus_per_node: int, nodes: int = 2) -> Path:
    """The service on ``nodes`` A100-80G nodes of ``gpus_per_node`` GPUs each."""
    azure_csv(tmp_path / "reqs.csv", [f"2023-11-16 18:00:{i:09.6f},300,8" for i in range(20)])
    (tmp_path / "services.yaml").write_text(SERVICE.format(size=size))
    (tmp_path / "cluster.yaml").write_text(
        f"name: two\nnode_groups:\n  - {{count: {nodes}, gpu_type: A100-80G, "
        f"gpus: {gpus_per_node}, nvlink_domain: {gpus_per_node}}}\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(tmp_path / "services.yaml"),
                                 "--cluster", str(tmp_path / "cluster.yaml"),
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _strict_json(path: Path) -> dict:
    def refuse(constant: str) -> None:
        raise ValueError(f"{path.name} holds {constant}, which is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


@pytest.mark.parametrize("size", [STATIC, AUTOSCALED], ids=["static", "autoscaled"])
def test_a_tensor_parallel_replica_is_never_split_across_nodes(tmp_path: Path,
                                                               size: str) -> None:
    # A TP-8 replica's step times are those of one NVLink node; two 4-GPU nodes are no
    # place for it (it was placed as 4 + 4 GPUs and served as if on one node).
    out = _run(tmp_path, size, gpus_per_node=4)
    with (out / "segments.csv").open() as f:
        assert [row["nodes"] for row in csv.DictReader(f)] == []


def test_an_autoscaled_service_none_of_whose_replicas_is_placed_serves_nothing(
        tmp_path: Path) -> None:
    # The replay of an empty placement plan autoscaled on its own (served every request)
    # and wrote "placement_delay_max": Infinity, which no JSON reader accepts.
    out = _run(tmp_path, AUTOSCALED, gpus_per_node=4)
    chat = _strict_json(out / "services.json")["services"]["chat"]
    assert chat["completed"] == 0 and chat["slo_attainment"] == 0.0
    assert chat["gpu_hours"] == 0.0
    assert chat["replicas_placed_late"] >= 1 and chat["placement_delay_max"] is None


def test_a_replica_that_fits_one_node_is_placed_on_one(tmp_path: Path) -> None:
    out = _run(tmp_path, STATIC, gpus_per_node=8)
    with (out / "segments.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(row["job_id"], row["nodes"].count(";")) for row in rows] == [("service:chat/0", 0)]
    assert _strict_json(out / "services.json")["services"]["chat"]["completed"] == 20


def _record(job_id: str, first_start: float | None, status: str) -> JobRecord:
    return JobRecord(job_id, "default", 8, 0.0, first_start, None, status, 0, 0.0, 0.0, 1.0,
                     "")


def test_replica_runs_mark_the_runs_the_scheduler_stopped(tmp_path: Path) -> None:
    # Replica 0 ran twice and finished (its last run ended as planned: not a stop); replica
    # 1 ran once and was stopped for good; a training job's rows are not a replica's.
    segments = tmp_path / "segments.csv"
    segments.write_text("job_id,start,end\nservice:chat/0,0.000000,5.000000\n"
                        "train-1,0.000000,9.000000\nservice:chat/1,0.000000,7.500000\n"
                        "service:chat/0,37.000000,60.000000\n")
    runs = replica_runs(segments, [_record("service:chat/0", 1e-7, "finished"),
                                   _record("service:chat/1", 0.0, "failed"),
                                   _record("train-1", 0.0, "finished")])
    assert runs == {"service:chat/0": [(1e-7, 5.0), (37.0, None)],
                    "service:chat/1": [(0.0, 7.5)]}


FAILURES = "categories:\n  - {name: gpu, rate_per_gpu_day: 1000, repair_hours: 0.002}\n"


@pytest.mark.parametrize("size", [STATIC, AUTOSCALED, DISAGGREGATED],
                         ids=["static", "autoscaled", "disaggregated"])
def test_a_replica_whose_node_fails_stops_serving_and_loses_its_requests(
        tmp_path: Path, size: str) -> None:
    # Node failures every few seconds (8 GPUs at 1,000 per GPU-day), each node down 7.2 s:
    # the requests a replica held when its node failed are lost, and it serves again only
    # after the restart overhead once placed again. It served every request as if never
    # stopped (a disaggregated service's pools until this session).
    azure_csv(tmp_path / "reqs.csv", [f"2023-11-16 18:00:{i * 0.5:09.6f},300,8"
                                      for i in range(60)])
    (tmp_path / "services.yaml").write_text(SERVICE.format(size=size))
    (tmp_path / "cluster.yaml").write_text(
        "name: two\nnode_groups:\n"
        "  - {count: 2, gpu_type: A100-80G, gpus: 8, nvlink_domain: 8}\n")
    (tmp_path / "often.yaml").write_text(FAILURES)
    chat = {}
    for name, extra in (("calm", []), ("failing", ["--failures", str(tmp_path / "often.yaml")])):
        result = runner.invoke(app, ["simulate", "--services", str(tmp_path / "services.yaml"),
                                     "--cluster", str(tmp_path / "cluster.yaml"),
                                     "--out", str(tmp_path / name), *extra])
        assert result.exit_code == 0, result.output
        chat[name] = _strict_json(tmp_path / name / "services.json")["services"]["chat"]
        said = " ".join(result.output.split())
        assert (f"{chat[name]['replica_stops']} replica stop" in said) == (name == "failing")
    calm, failing = chat["calm"], chat["failing"]
    assert calm["lost"] == 0 and calm["replica_stops"] == 0 and calm["replica_restarts"] == 0
    assert calm["completed"] == 60
    assert failing["replica_stops"] >= 1 and failing["lost"] >= 1
    assert failing["completed"] + failing["lost"] <= 60
    assert failing["slo_attainment"] < calm["slo_attainment"]
    assert failing["replicas"] == len(failing["replica_starts"]) <= 2
    # A replica ends with its service (the last request, which arrives at 29.5 s, done on
    # replicas up from 0), however long it was down: it made up its downtime as a training
    # job makes up lost work, and held its GPUs up to twice as long.
    with (tmp_path / "failing" / "segments.csv").open() as f:
        ends = [float(row["end"]) for row in csv.DictReader(f)]
    assert calm["served_until_s"] > 29.5 and max(ends) <= calm["served_until_s"] + 1e-6
    # Undisturbed, its GPUs are held until that last request is done, as the service counts
    # them (they went back when the last one arrived, while it still served).
    with (tmp_path / "calm" / "segments.csv").open() as f:
        calm_ends = [float(row["end"]) for row in csv.DictReader(f)]
    assert calm_ends and all(end == pytest.approx(calm["served_until_s"], abs=1e-6)
                             for end in calm_ends)


def test_a_replica_first_placed_after_its_service_ended_serves_nothing(tmp_path: Path) -> None:
    """One 8-GPU node, two TP-8 replicas under FIFO: the second is placed only when the first
    ends, at the service's end, and ends the moment it starts (``JobSpec.ends_at``). It was
    counted as placed and served from then on, holding no GPU (the example's ``chat`` on a
    full cluster: 4 replicas "placed" at 332 s served 1,445 requests to 758 s)."""
    out = _run(tmp_path, "replicas: 2", gpus_per_node=8, nodes=1)
    with (out / "segments.csv").open() as f:
        second = [r for r in csv.DictReader(f) if r["job_id"] == "service:chat/1"]
    assert len(second) == 1 and second[0]["start"] == second[0]["end"]  # a zero-length run
    chat = _strict_json(out / "services.json")["services"]["chat"]
    assert chat["replicas"] == 1 and chat["replica_starts"] == [0.0]
    assert chat["completed"] == 20  # all on the first replica


def test_replica_runs_drop_a_run_that_began_at_the_replicas_end(tmp_path: Path) -> None:
    segments = tmp_path / "segments.csv"
    segments.write_text("job_id,start,end\nservice:chat/0,0.000000,50.000000\n"
                        "service:chat/1,50.000000,50.000000\n")
    ended = [JobRecord("service:chat/0", "default", 8, 0.0, 0.0, 50.0, "finished", 0, 0.0,
                       0.0, 1.0, ""),
             JobRecord("service:chat/1", "default", 8, 0.0, 50.0, 50.0, "finished", 0, 0.0,
                       0.0, 1.0, "")]
    assert replica_runs(segments, ended) == {"service:chat/0": [(0.0, None)]}


TWO_SERVICES = "services:\n" + "".join(
    f"  - {{name: {name}, model: llama2-70b, gpu: A100-80G, tensor_parallel: 8, replicas: 1,\n"
    f"     slo: {{ttft_ms: 2500, tpot_ms: 150}}, trace: {name}.csv}}\n"
    for name in ("first", "second"))


def _two_services(tmp_path: Path, first: list[str], second: list[str]) -> Path:
    """Services ``first`` and ``second`` (one TP-8 replica each, these Azure rows) on one
    8-GPU node under FIFO: ``second`` is placed when ``first``'s replica ends."""
    azure_csv(tmp_path / "first.csv", first)
    azure_csv(tmp_path / "second.csv", second)
    (tmp_path / "services.yaml").write_text(TWO_SERVICES)
    (tmp_path / "cluster.yaml").write_text(
        "name: one\nnode_groups:\n  - {count: 1, gpu_type: A100-80G, gpus: 8, "
        "nvlink_domain: 8}\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(tmp_path / "services.yaml"),
                                 "--cluster", str(tmp_path / "cluster.yaml"),
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _held(out: Path, job_id: str) -> tuple[float, float]:
    with (out / "segments.csv").open() as f:
        (row,) = [r for r in csv.DictReader(f) if r["job_id"] == job_id]
    return float(row["start"]), float(row["end"])


def test_a_replica_placed_late_goes_at_its_jobs_end_losing_what_it_holds(
        tmp_path: Path) -> None:
    """``second``'s 20 requests (400 tokens each) arrive in its first 1.9 s; its replica job
    ends when they are done on a replica up from 0 (22.2 s), but the core places it only at
    9.4 s, when ``first`` is done: it cannot finish them by its end and loses them, with no
    stop counted; its GPUs count until that end. It served them all to 30.8 s, holding no
    GPU after 22.2 s (0.048 GPU-h counted, not the 0.029 it held)."""
    out = _two_services(tmp_path, [f"2023-11-16 18:00:{i:09.6f},300,8" for i in range(10)],
                        [f"2023-11-16 18:00:{i / 10:09.6f},300,400" for i in range(20)])
    start, end = _held(out, "service:second/0")
    assert start == pytest.approx(_held(out, "service:first/0")[1]) and start < end
    second = _strict_json(out / "services.json")["services"]["second"]
    assert second["replica_starts"] == [pytest.approx(start, abs=1e-6)]
    assert second["served_until_s"] <= end
    assert second["completed"] == 0 and second["lost"] == 20 and second["replica_stops"] == 0
    assert second["gpu_hours"] == pytest.approx((end - start) * 8 / 3600, abs=1e-8)


def test_schedule_of_runs_ends_the_last_run_at_the_replicas_end() -> None:
    # Replica 0 was stopped at 5 s, placed again at 37 s and ended at 60 s; replica 1 ran
    # from 1 s to its end at 60 s; replica 2 was never placed. Only the stop is a stop.
    schedule = Schedule.of_runs([[(0.0, 5.0), (37.0, None)], [(1.0, None)], []], 30.0,
                                [60.0, 60.0, None])
    assert schedule == Schedule((0.0, 1.0), (5.0, 60.0), ((37.0, 67.0, None, 60.0, True),),
                                (False, True))


def test_a_services_replicas_end_with_its_own_trace_not_the_longest(tmp_path: Path) -> None:
    """``first``'s requests arrive in 9 s and are done at 9.4 s, ``second``'s over 29 s: the
    node goes to ``second`` when ``first`` is done. ``first`` held it to 29 s, the longest
    trace's end, serving nothing after 9.4 s (a 100 s service held its node 1,199 s)."""
    out = _two_services(tmp_path, [f"2023-11-16 18:00:{i:09.6f},300,8" for i in range(10)],
                        [f"2023-11-16 18:00:{i:09.6f},300,200" for i in range(30)])
    services = _strict_json(out / "services.json")["services"]
    first_end = _held(out, "service:first/0")[1]
    assert first_end == pytest.approx(services["first"]["served_until_s"], abs=1e-6)
    assert first_end < 10.0
    assert services["second"]["replica_starts"] == [pytest.approx(first_end, abs=1e-6)]
