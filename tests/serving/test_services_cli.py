"""``dlsched simulate --services`` and ``dlsched replicas``: the contract and its errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from serving_helpers import azure_csv
from typer.testing import CliRunner

from dlsched.cli import app

runner = CliRunner()
CONTRACT = {"requests", "slo_attainment", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99",
            "latency_p99", "goodput_rps", "gpu_hours"}


def _trace(tmp_path: Path, n: int = 40, gap: float = 0.5) -> Path:
    rows = [f"2023-11-16 18:00:{i * gap:09.6f},{200 + 37 * (i % 5)},{5 + i % 7}"
            for i in range(n)]
    return azure_csv(tmp_path / "reqs.csv", rows)


def _services(tmp_path: Path, body: str) -> Path:
    _trace(tmp_path)
    path = tmp_path / "services.yaml"
    path.write_text("services:\n" + body)
    return path


CHAT = """  - name: chat
    model: llama2-70b
    gpu: A100-80G
    tensor_parallel: 8
    replicas: 2
    slo: {ttft_ms: 2500, tpot_ms: 150}
    trace: reqs.csv
"""


def test_simulate_services_writes_the_contract(tmp_path: Path) -> None:
    services = _services(tmp_path, CHAT)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "services.json").read_text())
    chat = report["services"]["chat"]
    assert set(chat) >= CONTRACT and report["wall_seconds"] > 0
    assert chat["requests"] == 40 and chat["replicas"] == 2
    assert chat["slo_attainment"] == 1.0  # 2 req/s of short prompts on 2 TP-8 replicas
    jobs = (out / "jobs.csv").read_text()
    assert "service:chat/0" in jobs and "service:chat/1" in jobs  # placed by the core


def test_the_line_of_an_autoscaled_service_says_so(tmp_path: Path) -> None:
    # "8/1 replicas placed" read as 8 of 1: an autoscaled service's replicas come and go.
    services = _services(tmp_path, CHAT.replace("    replicas: 2\n", "") + "    autoscaling: {"
                         "min: 1, max: 3, "
                         "target_outstanding: 1, interval_s: 5, cold_start_s: 1}\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 0, result.output
    chat = json.loads((out / "services.json").read_text())["services"]["chat"]
    line = " ".join(result.output.split())
    replicas = "1 replica" if chat["replicas"] == 1 else f"{chat['replicas']} replicas"
    assert (f"chat: {replicas} over the run (autoscaled from "
            f"{chat['replicas_requested']}, peak {chat['replicas_peak']}, ") in line
    assert "replicas placed," not in line


def test_training_jobs_share_the_cluster(tmp_path: Path) -> None:
    services = _services(tmp_path, CHAT)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--trace",
                                 "philly-sample", "--limit", "20", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "services.json").read_text())
    assert report["training_jobs"] == 20
    assert report["cluster"] == "philly+services"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["jobs_submitted"] == 22  # 20 training jobs + 2 replicas


def test_a_training_model_that_cannot_rate_replicas_is_named(tmp_path: Path) -> None:
    """Beside pollux-1 (the pollux model) the run ended in "job service:chat/0: the pollux
    model needs spec.model and batch_size"; it says why and what to pass."""
    services = _services(tmp_path, CHAT)
    args = ["simulate", "--services", str(services), "--trace", "pollux-1", "--limit", "10",
            "--out", str(tmp_path / "out")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert "its throughput model 'pollux' rates training jobs only" in result.output
    assert "--throughput linear" in result.output
    assert runner.invoke(app, [*args, "--throughput", "linear"]).exit_code == 0


@pytest.mark.parametrize(("change", "where", "what"), [
    (("llama2-70b", "llama9-1t"), "services.yaml:3:services[0].model",
     "no measured step times for llama9-1t"),
    (("tpot_ms: 150", "tpot_ms: 10"), "services.yaml:7:services[0].slo.tpot_ms",
     "no measured hardware meets it"),
    (("tpot_ms: 150", "tpot_ms: 35"), "services.yaml:7:services[0].slo.tpot_ms",
     "the fastest measured hardware would (H100 TP-"),
    (("replicas: 2", "replicas: two"), "services.yaml:6:services[0].replicas",
     "expected a number"),
    (("slo:", "sla:"), "services.yaml:7:services[0].sla", "unknown"),
    (("tensor_parallel: 8", "tensor_parallel: 3"), "services.yaml:4:services[0].gpu",
     "degree 3"),
    # each was silently ignored: replicas 2 beside autoscaling ran 1..3, and an llm service
    # has no dynamic batcher (a dnn one no engine)
    (("replicas: 2", "replicas: 2\n    autoscaling: {min: 1, max: 3}"),
     "services.yaml:6:services[0].replicas", "give replicas or autoscaling, not both"),
    (("replicas: 2", "replicas: 2\n    batching: {max_batch: 8}"),
     "services.yaml:7:services[0].batching", "batching is read only for a kind: dnn service"),
    (("model: llama2-70b", "kind: dnn\n    model: resnet\n    engine: {max_batch: 8}"),
     "services.yaml:5:services[0].engine", "engine is read only for a kind: llm service"),
    # it named only the missing file, not the services file's line
    (("trace: reqs.csv", "trace: nope.csv"), "services.yaml:8:services[0].trace",
     "no such request trace file:"),
], ids=["unknown-model", "slo-no-hardware-meets", "slo-needs-other-hardware", "bad-number",
        "unknown-key", "unmeasured-tp", "replicas-and-autoscaling", "batching-on-llm",
        "engine-on-dnn", "missing-trace"])
def test_bad_services_file_names_file_line_field(tmp_path: Path, change: tuple[str, str],
                                                 where: str, what: str) -> None:
    services = _services(tmp_path, CHAT.replace(*change))
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert f"{tmp_path}/{where}" in text.replace("\n", "") and what in text
    assert not (out / "services.json").exists()  # nothing half-written


@pytest.mark.parametrize(("gpu", "prefill_gpu", "where"), [
    ("H100", "A100-80G", "services.yaml:9:services[0].disaggregation.prefill_gpu"),
    ("A100-80G", "H100", "services.yaml:4:services[0].gpu"),
], ids=["prefill-pool", "decode-pool"])
def test_a_gpu_type_the_cluster_lacks_is_named(tmp_path: Path, gpu: str, prefill_gpu: str,
                                               where: str) -> None:
    # The prefill pool's GPU type went unchecked: its replica "can never run", and the
    # service served nothing, without a word.
    body = CHAT.replace("A100-80G", gpu).replace("replicas: 2", "replicas: 1") + \
        f"    disaggregation: {{prefill_replicas: 1, prefill_gpu: {prefill_gpu}}}\n"
    services = _services(tmp_path, body)
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text("name: h100s\nnode_groups:\n  - {count: 1, gpu_type: H100, gpus: 8, "
                       "nvlink_domain: 8}\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--cluster",
                                 str(cluster), "--out", str(out)])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    missing = prefill_gpu if gpu == "H100" else gpu
    assert f"{where}: cluster h100s has no {missing} GPUs (it has: H100)" in text
    assert not (out / "services.json").exists()


def test_malformed_request_row_stops_the_run(tmp_path: Path) -> None:
    services = _services(tmp_path, CHAT)
    azure_csv(tmp_path / "reqs.csv", ["2023-11-16 18:00:00,10,3", "2023-11-16 18:00:01,,3"])
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out",
                                 str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "reqs.csv:3:ContextTokens: missing value" in " ".join(result.output.split())


# A DNN service answering in 100 ms alone, 130 ms in a batch of 4.
VISION = """  - name: vision
    kind: dnn
    model: resnet50
    gpu: V100
    slo: {latency_ms: 150}
    batching: {latency_ms: {1: 100, 4: 130}, max_batch: 4, timeout_ms: 0}
    trace: reqs.csv
"""


def test_replicas_command_finds_the_fewest_meeting_the_target(tmp_path: Path) -> None:
    services = _services(tmp_path, VISION)
    # 40 requests 0.5 s apart, 100 ms each: one replica serves every one in 100 ms
    result = runner.invoke(app, ["replicas", str(services), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["vision"]["replicas"] == 1
    text = runner.invoke(app, ["replicas", str(services)]).output
    assert "vision: 1 replica reaches " in text  # not "1 replicas reach"
    azure_csv(tmp_path / "reqs.csv", ["2023-11-16 18:00:00,1,1"] * 8)
    # 8 requests at once: a batch of 4 takes 130 ms, so one replica's second batch ends at
    # 0.26 s, past 150 ms; two replicas serve both batches at once
    result = runner.invoke(app, ["replicas", str(services), "--json"])
    answer = json.loads(result.stdout)["vision"]
    assert answer["replicas"] == 2
    assert answer["tried"][0] == {"replicas": 1, "slo_attainment": 0.5}


def test_autoscaled_service_replicas_are_placed_when_the_autoscaler_asks(
        tmp_path: Path) -> None:
    body = CHAT.replace("    replicas: 2\n", "    autoscaling: {min: 1, max: 3, interval_s: 2, "
                        "target_outstanding: 1, cold_start_s: 5}\n")
    services = _services(tmp_path, body)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 0, result.output
    chat = json.loads((out / "services.json").read_text())["services"]["chat"]
    assert chat["replicas_placed_late"] == 0  # the auto-sized cluster has room for max
    assert chat["replicas_peak"] >= 1 and chat["requests"] == 40
    bad = _services(tmp_path, CHAT.replace("    replicas: 2\n",
                                           "    autoscaling: {min: 3, max: 2}\n"))
    result = runner.invoke(app, ["simulate", "--services", str(bad), "--out", str(out)])
    assert result.exit_code == 2
    assert "services[0].autoscaling.max: must be >= min (3)" in " ".join(result.output.split())


def test_disaggregated_service_places_both_pools(tmp_path: Path) -> None:
    body = CHAT + "    disaggregation: {prefill_replicas: 1, prefill_gpu: H100}\n"
    services = _services(tmp_path, body)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 0, result.output
    chat = json.loads((out / "services.json").read_text())["services"]["chat"]
    assert (chat["replicas"], chat["prefill_replicas"], chat["prefill_gpu"]) == (2, 1, "H100")
    assert chat["slo_attainment"] == 1.0 and chat["requests"] == 40
    jobs = (out / "jobs.csv").read_text()
    assert "service:chat/prefill/0" in jobs and "service:chat/1" in jobs
    bad = _services(tmp_path, body.replace("prefill_gpu: H100", "prefill_gpu: T4"))
    result = runner.invoke(app, ["simulate", "--services", str(bad), "--out", str(out)])
    assert result.exit_code == 2
    assert "services[0].disaggregation.prefill_gpu: no measured step times" in \
        " ".join(result.output.split())


def test_servegen_rates_need_lengths_and_then_run(tmp_path: Path) -> None:
    (tmp_path / "client.csv").write_text("0,1.0,1.0,Gamma,1.0,1.0\n")
    body = CHAT.replace("trace: reqs.csv", "trace: client.csv") + "    duration_s: 30\n"
    services = _services(tmp_path, body)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 2
    assert "services[0].trace: a ServeGen rate trace carries no token counts" in \
        " ".join(result.output.split())
    services = _services(tmp_path, body + "    lengths: reqs.csv\n    seed: 5\n")
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 0, result.output
    chat = json.loads((out / "services.json").read_text())["services"]["chat"]
    assert 10 < chat["requests"] < 60  # about 1 request a second for 30 s


def test_compare_runs_the_services_under_each_policy(tmp_path: Path) -> None:
    # `compare --services` ignored the services file: it ran the policies on the default
    # training trace (philly-sample, 2,000 jobs) and wrote no services.json.
    services = _services(tmp_path, CHAT)
    out = tmp_path / "out"
    result = runner.invoke(app, ["compare", "--services", str(services), "--policies",
                                 "fifo,tiresias", "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "fifo: chat: 2/2 replicas placed, 40 requests" in said
    assert "tiresias: chat: 2/2 replicas placed, 40 requests" in said
    reports = json.loads((out / "services.json").read_text())
    assert sorted(reports) == ["fifo", "tiresias"]
    for policy in reports:
        assert reports[policy]["policy"] == policy
        assert reports[policy]["services"]["chat"]["requests"] == 40
        assert (out / policy / "services.json").exists()
        assert "service:chat/1" in (out / policy / "jobs.csv").read_text()
    assert (out / "report.html").exists()
    assert sorted(json.loads((out / "summary.json").read_text())) == ["fifo", "tiresias"]


def test_a_dnn_service_line_gives_its_latencies_in_ms(tmp_path: Path) -> None:
    # It read "TTFT p50/p99 100/100 ms, TPOT p50/p99 0/0 ms, latency p99 0.1 s": a DNN
    # model answers once, its TPOT is no measure, and 100 ms printed as 0.1 s.
    services = _services(tmp_path, VISION)
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "met by 100.00%, latency p50/p99 100/100 ms, goodput 2.05 req/s" in said, said
    assert "TPOT" not in said
    assert json.loads((out / "services.json").read_text())["services"]["vision"]["kind"] == \
        "dnn"


def test_replicas_of_a_disaggregated_service_are_its_decode_pool(tmp_path: Path) -> None:
    # It said "chat: 1 replica reaches 99% SLO attainment": the count searched is the
    # decode pool's, its prefill pool staying as the file gives it.
    services = _services(tmp_path, CHAT + "    disaggregation: {prefill_replicas: 3}\n")
    text = " ".join(runner.invoke(app, ["replicas", str(services)]).output.split())
    assert "chat: 1 decode replica (beside its 3 prefill replicas) reaches 99% SLO" in text
    result = runner.invoke(app, ["replicas", str(services), "--json"])
    assert json.loads(result.stdout)["chat"]["prefill_replicas"] == 3


def test_compare_checks_every_policy_before_the_first_run(tmp_path: Path) -> None:
    # A typo in the last policy failed only after the first policy's whole run.
    services = _services(tmp_path, CHAT)
    out = tmp_path / "out"
    result = runner.invoke(app, ["compare", "--services", str(services), "--policies",
                                 "fifo,tiresas", "--out", str(out)])
    assert result.exit_code == 2
    assert "error: unknown policy 'tiresas'" in " ".join(result.output.split())
    assert not (out / "fifo").exists()


def test_lengths_beside_a_request_trace_is_refused(tmp_path: Path) -> None:
    # It was ignored without a word: the requests kept their own token counts.
    azure_csv(tmp_path / "other.csv", ["2023-11-16 18:00:00,4000,900"])
    services = _services(tmp_path, CHAT + "    lengths: other.csv\n")
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out",
                                 str(tmp_path / "out")])
    assert result.exit_code == 2
    assert ("services.yaml:9:services[0].lengths: reqs.csv is a request trace with its own "
            "token counts: lengths is for a ServeGen rate trace (remove it)") in \
        " ".join(result.output.split())


@pytest.mark.parametrize(("value", "said"), [
    ("1e9", "expected a number, got '1e9' (YAML reads it as text: write 1.0e+9)"),
    ("1.5e9", "expected a number, got '1.5e9' (YAML reads it as text: write 1.5e+9)"),
    ("2e-3", "expected a number, got '2e-3' (YAML reads it as text: write 2.0e-3)"),
    ("fast", "expected a number, got 'fast'"),
], ids=["exponent", "unsigned-exponent", "no-dot", "word"])
def test_a_number_yaml_reads_as_text_says_how_to_write_it(tmp_path: Path, value: str,
                                                         said: str) -> None:
    # "expected a number, got '1e9'" left the user to find YAML 1.1's rule (a dot needed).
    services = _services(tmp_path, CHAT + f"    rate_scale: {value}\n")
    result = runner.invoke(app, ["replicas", str(services)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert f"services[0].rate_scale: {said}" in text
    assert text.endswith(said)


TENANTS = """flavors:
  - {name: a100, gpu_types: [A100-80G]}
cluster_queues:
  - {name: serving, quotas: {a100: {gpu: 16}}}
"""


def test_a_service_queue_the_tenant_file_lacks_is_named(tmp_path: Path) -> None:
    # Its replicas were never admitted: "chat: 0/2 replicas placed ... met by 0.00%", the
    # reason only in jobs.csv's pending_reason.
    (tmp_path / "tenants.yaml").write_text(TENANTS)
    out = tmp_path / "out"
    args = ["simulate", "--tenants", str(tmp_path / "tenants.yaml"), "--out", str(out)]
    result = runner.invoke(app, [*args, "--services", str(_services(tmp_path, CHAT))])
    assert result.exit_code == 2
    assert ("services.yaml:2:services[0].queue: 'default' is no local or cluster queue of the "
            "tenant file") in " ".join(result.output.split())
    assert not (out / "services.json").exists()
    served = _services(tmp_path, CHAT + "    queue: serving\n")
    result = runner.invoke(app, [*args, "--services", str(served)])
    assert result.exit_code == 0, result.output
    assert "chat: 2/2 replicas placed" in " ".join(result.output.split())


def test_a_trace_of_one_request_has_no_goodput_rate(tmp_path: Path) -> None:
    # One request spans 0 s: its goodput was 1 / 1e-9 s, "goodput 1000000000.00 req/s",
    # beside "1 requests".
    services = _services(tmp_path, CHAT)
    azure_csv(tmp_path / "reqs.csv", ["2023-11-16 18:00:00,10,3"])
    out = tmp_path / "out"
    result = runner.invoke(app, ["simulate", "--services", str(services), "--out", str(out)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "2/2 replicas placed, 1 request, SLO" in said and "goodput - req/s" in said
    chat = json.loads((out / "services.json").read_text())["services"]["chat"]
    assert chat["goodput_rps"] is None and chat["slo_attainment"] == 1.0


def test_replicas_of_an_unknown_service_lists_the_files_services(tmp_path: Path) -> None:
    """``--service visoin`` said only "no service named 'visoin'"."""
    services = _services(tmp_path, VISION + CHAT)
    result = runner.invoke(app, ["replicas", str(services), "--service", "visoin"])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert ("no service named 'visoin' (its services: vision, chat); did you mean 'vision'?"
            in text)
