"""The command line contract that scripts rely on (issue 2, item 9)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app

CONTRACT_KEYS = {"policy", "trace", "cluster", "seed", "jobs_submitted", "jobs_finished",
                 "jct_mean", "jct_p99", "makespan", "utilization", "wall_seconds"}
runner = CliRunner()


def invoke(*args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_simulate_writes_the_contract_files(tmp_path: Path) -> None:
    invoke("simulate", "--trace", "pollux-1", "--cluster", "pollux-64", "--policy", "fifo",
           "--seed", "3", "--out", str(tmp_path))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert set(summary) >= CONTRACT_KEYS
    assert (summary["policy"], summary["trace"], summary["cluster"], summary["seed"]) == (
        "fifo", "pollux-1", "pollux-64", 3)
    assert summary["jobs_submitted"] == summary["jobs_finished"] == 160
    header = (tmp_path / "jobs.csv").read_text().splitlines()[0].split(",")
    assert header[:3] == ["job_id", "queue", "num_gpus"]
    assert len((tmp_path / "jobs.csv").read_text().splitlines()) == 161


def test_same_seed_and_config_give_byte_identical_results(tmp_path: Path) -> None:
    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        invoke("simulate", "--trace", "synthetic", "--synthetic-jobs", "200",
               "--synthetic-rate", "40", "--seed", "11", "--cluster", "gavel-108",
               "--policy", "tiresias", "--out", str(out))
    for name in ("jobs.csv", "timeline.csv", "run.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name


def test_a_run_repeats_from_its_config_file(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    invoke("simulate", "--trace", "pollux-2", "--cluster", "pollux-64", "--policy",
           "tiresias", "--policy-opt", "thresholds=1000:10000", "--out", str(first))
    invoke("simulate", "--config", str(first / "config.yaml"), "--out", str(second))
    assert (first / "jobs.csv").read_bytes() == (second / "jobs.csv").read_bytes()


def test_config_yaml_repeats_a_run_of_relative_files_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """config.yaml recorded `cluster: one.yaml` and `policy_files: [mine.py]` as typed, so
    `simulate --config DIR/config.yaml` from another folder failed: 'one.yaml: cannot read'."""
    lab, elsewhere = tmp_path / "lab", tmp_path / "elsewhere"
    lab.mkdir()
    elsewhere.mkdir()
    (lab / "one.yaml").write_text("name: one\nnode_groups:\n  - {count: 2, gpus: 4, "
                                  "gpu_type: V100}\n")
    (lab / "jobs.csv").write_text("job_id,submit_time,num_gpus,duration,queue\nA,0,4,10,q\n"
                                  "B,1,2,10,q\nC,2,4,10,q\n")
    (lab / "mine.py").write_text(
        "from dlsched.policies.fifo import fifo\n"
        "from dlsched.scheduling.registry import register_policy\n\n\n"
        "@register_policy('mine-fifo')\n"
        "def mine(placement: str = 'consolidated'):\n"
        "    \"\"\"FIFO under another name.\"\"\"\n"
        "    return fifo(placement=placement)\n")
    monkeypatch.chdir(lab)
    invoke("simulate", "--trace", "jobs.csv", "--cluster", "one.yaml", "--policy", "mine-fifo",
           "--policy-file", "mine.py", "--out", "run")
    monkeypatch.chdir(elsewhere)
    invoke("simulate", "--config", str(lab / "run" / "config.yaml"), "--out", "again")
    assert ((elsewhere / "again" / "jobs.csv").read_bytes()
            == (lab / "run" / "jobs.csv").read_bytes())


def test_compare_writes_one_folder_per_policy_and_a_report(tmp_path: Path) -> None:
    invoke("compare", "--trace", "pollux-1", "--cluster", "pollux-64", "--policies",
           "fifo,tiresias", "--out", str(tmp_path))
    assert (tmp_path / "fifo" / "summary.json").exists()
    assert (tmp_path / "tiresias" / "jobs.csv").exists()
    report = (tmp_path / "report.html").read_text()
    assert "tiresias" in report and "<svg" in report
    assert set(json.loads((tmp_path / "summary.json").read_text())) == {"fifo", "tiresias"}


BAD_ROWS = "timestamp,duration,num_gpus,gpu_time,cluster\n" \
           "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n" \
           "2017-10-09 07:02:55,-5,1,66.0,11cb48\n" \
           "2017-10-09 07:03:55,60,1,60.0,11cb48\n"


def test_a_bad_row_stops_the_run_naming_file_line_and_field(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text(BAD_ROWS)
    result = runner.invoke(app, ["simulate", "--trace", str(trace), "--cluster", "philly",
                                 "--policy", "fifo", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert f"{trace}:3:duration" in " ".join(result.output.split())
    assert not (tmp_path / "out" / "summary.json").exists()


def test_skip_invalid_counts_the_bad_row_and_runs_the_rest(tmp_path: Path) -> None:
    trace = tmp_path / "bad.csv"
    trace.write_text(BAD_ROWS)
    output = invoke("simulate", "--trace", str(trace), "--format", "philly", "--cluster",
                    "philly", "--policy", "fifo", "--skip-invalid", "--out",
                    str(tmp_path / "out"))
    assert "skipped 1 invalid row (first:" in output  # not '1 invalid rows'
    assert "trace bad: 2 jobs;" in output
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["jobs_submitted"] == 2


@pytest.mark.parametrize(("limit", "told"), [("1", "1 job;"), ("2", "2 jobs;")],
                         ids=["one", "two"])
def test_the_trace_line_counts_jobs_in_english(tmp_path: Path, limit: str, told: str) -> None:
    """'trace itp: 1 jobs' read wrong; the noun follows the count."""
    trace = tmp_path / "itp.csv"
    trace.write_text("job_id,submission_time,duration,num_gpu\na1,0,100,1\na2,10,100,1\n")
    output = invoke("simulate", "--trace", str(trace), "--limit", limit, "--cluster", "philly",
                    "--policy", "fifo", "--out", str(tmp_path / "out"))
    assert f"trace itp: {told}" in output


@pytest.mark.parametrize(("args", "message"), [
    (["--policy", "nope"], "unknown policy 'nope'"),
    (["--policy", "fifo", "--policy-opt", "thresholds=1:2"], "no policy of fifo has it"),
    (["--policy", "tiresias", "--policy-opt", "treshold=3"],
     "no policy of tiresias has it (did you mean 'thresholds'?); their options: thresholds, "),
    (["--policy", "fifo", "--placement", "diagonal"], "--placement: 'diagonal'"),
    (["--policy", "fifo", "--jobs-format", "xml"], "--jobs-format: 'xml'"),
    (["--policy", "fifo", "--cluster", "no-such-cluster"], "no-such-cluster"),
    (["--policy", "fifo", "--throughput", "nope"], "unknown throughput model 'nope'"),
    # the names were a Python list's repr (['gavel', ...]), and a typo got no hint
    (["--policy", "fifo", "--throughput", "lineer"],
     "unknown throughput model 'lineer' (known: gavel, gavel-interference, gavel-physical,"),
    (["--policy", "fifo", "--throughput", "lineer"], "); did you mean 'linear'?"),
    (["--policy", "fifo", "--trace", "philly-sample", "--throughput", "goodput"],
     ": the goodput model needs spec.model"),
    # Gavel's steps ran as seconds under linear: 925,982 steps took 10.7 days, silently
    (["--policy", "fifo", "--trace", "gavel-continuous-1000", "--cluster", "gavel-108",
      "--limit", "5", "--throughput", "linear"],
     "--throughput linear counts work in reference seconds, but trace gavel-continuous-1000's "
     "job continuous-1000-0 counts it in iterations (its model: gavel)"),
    (["--policy", "fifo", "--throughput", "gavel"], "--throughput gavel counts work in "
     "iterations, but trace pollux-1's job cifar10-0 counts it in reference seconds"),
    # ":x:" is an emoji code to rich: the console must print it as text
    (["--policy", "fifo", "--policy-opt", "srtf:x=1"],
     "--policy-opt srtf:x: policy 'srtf' is not being run"),
], ids=["unknown-policy", "option-of-no-policy", "option-typo", "bad-placement", "bad-jobs-format",
        "unknown-cluster", "unknown-throughput-model", "throughput-model-names",
        "throughput-model-typo", "model-that-cannot-rate-a-job",
        "steps-as-seconds", "seconds-as-steps",
        "emoji-code-in-a-message"])
def test_bad_options_get_a_clear_error(tmp_path: Path, args: list[str], message: str) -> None:
    base = ["simulate", "--trace", "pollux-1", "--cluster", "pollux-64", "--out", str(tmp_path)]
    result = runner.invoke(app, base + args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())


def test_throughput_model_is_chosen_and_recorded(tmp_path: Path) -> None:
    # Pollux's first 20 jobs under the goodput model: the run re-rates jobs as they progress
    # (goodput.csv), its config records the model, and it differs from the trace's own model.
    runs = {}
    for model in ("goodput", None):
        out = tmp_path / str(model)
        invoke("simulate", "--trace", "pollux-1", "--cluster", "pollux-64", "--policy", "pollux",
               "--limit", "20", "--out", str(out), *(["--throughput", model] if model else []))
        runs[model] = json.loads((out / "summary.json").read_text())["jct_mean"]
        assert (out / "goodput.csv").exists() == (model == "goodput")
    assert "throughput: goodput" in (tmp_path / "goodput" / "config.yaml").read_text()
    assert runs["goodput"] != runs[None]


@pytest.mark.parametrize("command", ["traces", "clusters", "policies"])
def test_listings(command: str) -> None:
    output = invoke(command)
    expected = {"traces": "pollux-1", "clusters": "gavel-108", "policies": "tiresias"}[command]
    assert expected in output


# -- --tenants (issue 6) ----------------------------------------------------------------------
# Two VCs of one 4-GPU node each; VC "a" submits two 4-GPU jobs of 1 h at once.
VC_CLUSTER = """name: two-vcs
nodes:
  - {name: na, gpu_type: P100, gpus: 4, pool: a}
  - {name: nb, gpu_type: P100, gpus: 4, pool: b}
"""
VC_TRACE = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:00:00,3600.0,4,14400.0,a
2017-10-09 07:00:00,3600.0,4,14400.0,a
"""
VC_TENANTS = """flavors: [{name: p100}]
cluster_queues:
  - {name: a, cohort: all, quotas: {p100: {gpu: 4}}}
  - {name: b, cohort: all, quotas: {p100: {gpu: 4}}}
"""


def _vc_files(tmp_path: Path, tenants: str = VC_TENANTS) -> list[str]:
    for name, text in (("c.yaml", VC_CLUSTER), ("t.csv", VC_TRACE), ("q.yaml", tenants)):
        (tmp_path / name).write_text(text)
    return ["simulate", "--trace", str(tmp_path / "t.csv"), "--format", "philly", "--cluster",
            str(tmp_path / "c.yaml"), "--policy", "fifo", "--out", str(tmp_path / "out")]


def _first_starts(out: Path) -> list[float]:
    rows = [line.split(",") for line in (out / "jobs.csv").read_text().splitlines()]
    column = rows[0].index("first_start")
    return sorted(float(row[column]) for row in rows[1:])


@pytest.mark.parametrize(("tenants", "starts"), [
    # Without tenants the Philly reader pins VC a's jobs to pool a: the second waits 1 h.
    (False, [0.0, 3600.0]),
    # With tenants the pin is dropped: a borrows b's idle quota and node, both start at once.
    (True, [0.0, 0.0]),
], ids=["pinned-to-vc-pool", "tenants-borrow"])
def test_tenants_drop_the_vc_pool_pin_so_a_vc_can_borrow(tmp_path: Path, tenants: bool,
                                                          starts: list[float]) -> None:
    args = _vc_files(tmp_path)
    invoke(*args, *(["--tenants", str(tmp_path / "q.yaml")] if tenants else []))
    assert _first_starts(tmp_path / "out") == starts


def test_strict_quotas_keep_a_vc_to_its_own_share(tmp_path: Path) -> None:
    strict = VC_TENANTS.replace("cohort: all, ", "")  # no cohort: no borrowing
    invoke(*_vc_files(tmp_path, strict), "--tenants", str(tmp_path / "q.yaml"))
    assert _first_starts(tmp_path / "out") == [0.0, 3600.0]


def test_tenants_are_recorded_and_jobs_get_a_queue_position(tmp_path: Path) -> None:
    invoke(*_vc_files(tmp_path), "--tenants", str(tmp_path / "q.yaml"))
    out = tmp_path / "out"
    assert "tenants: " + str(tmp_path / "q.yaml") in (out / "config.yaml").read_text()
    header = (out / "jobs.csv").read_text().splitlines()[0].split(",")
    assert header[header.index("pending_reason") + 1] == "queue_position"
    invoke("simulate", "--config", str(out / "config.yaml"), "--out", str(tmp_path / "again"))
    assert _first_starts(tmp_path / "again") == [0.0, 0.0]


def test_a_trace_queue_unknown_to_the_tenants_is_a_clear_error(tmp_path: Path) -> None:
    only_b = "flavors: [{name: p100}]\ncluster_queues: [{name: b, quotas: {p100: {gpu: 4}}}]\n"
    result = runner.invoke(app, [*_vc_files(tmp_path, only_b), "--tenants",
                                 str(tmp_path / "q.yaml")])
    assert result.exit_code == 2
    assert "q.yaml: trace t's jobs use queue 'a' (2 jobs)" in " ".join(result.output.split())


def test_a_bad_tenant_file_names_file_line_and_key(tmp_path: Path) -> None:
    bad = VC_TENANTS.replace("{gpu: 4}}}\n  - {name: b", "{gpu: 4}}, weigth: 2}\n  - {name: b")
    result = runner.invoke(app, [*_vc_files(tmp_path, bad), "--tenants",
                                 str(tmp_path / "q.yaml")])
    assert result.exit_code == 2
    assert "q.yaml:3" in result.output and "weigth" in result.output


def test_jobs_still_pending_at_the_end_show_their_reason_and_queue_position(
        tmp_path: Path) -> None:
    # a has no quota and no cohort: its two jobs can never be admitted. They end the run
    # pending, first and second in a, with the tenant layer's reason.
    no_quota = VC_TENANTS.replace("a, cohort: all, quotas: {p100: {gpu: 4}}",
                                  "a, quotas: {p100: {gpu: 0}}").replace("cohort: all, ", "")
    invoke(*_vc_files(tmp_path, no_quota), "--tenants", str(tmp_path / "q.yaml"))
    with (tmp_path / "out" / "jobs.csv").open() as table:
        rows = list(csv.DictReader(table))
    assert sorted(r["queue_position"] for r in rows) == ["1", "2"]
    assert all("no quota in any flavor" in r["pending_reason"] for r in rows)


def test_starting_the_cli_loads_no_numpy() -> None:
    """``dlsched --help`` (and every verb's start) stays light: the ``plan`` verb's registration
    once loaded the throughput models, and with them numpy, on every command (+0.7 s)."""
    import subprocess
    import sys

    probe = ("import sys, dlsched.cli; "
             "assert 'numpy' not in sys.modules, 'numpy loaded at CLI start-up'")
    subprocess.run([sys.executable, "-c", probe], check=True)


def test_an_output_folder_that_cannot_be_made_fails_before_the_run(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    result = runner.invoke(app, ["simulate", "--trace", "pollux-1", "--cluster", "pollux-64",
                                 "--policy", "fifo", "--out", str(blocker / "out")])
    assert result.exit_code != 0
    assert f"--out {blocker / 'out'}: cannot create the folder" in result.output
    assert "trace pollux-1" not in result.output  # nothing was simulated


_SACCT = """JobID|Partition|Submit|Start|End|State|AllocTRES
1|gpu|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T11:00:00|COMPLETED|cpu=4,gres/gpu=2
"""
_CLUSTER = "name: mine\nnode_groups:\n  - {count: 2, gpus: 8, gpu_type: A100}\n"


def test_simulate_names_the_rows_a_reader_left_out(tmp_path: Path) -> None:
    """Rows left out on purpose (a job step, a job without GPUs) are told, one line per
    reason, not only rows skipped as invalid."""
    (tmp_path / "week.sacct").write_text(
        _SACCT + "1.batch|gpu|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T11:00:00|"
                "COMPLETED|cpu=4\n4|cpu|2026-11-01T10:00:00|2026-11-01T10:00:00|"
                "2026-11-01T11:00:00|COMPLETED|cpu=4\n5|cpu|2026-11-01T10:00:00|"
                "2026-11-01T10:00:00|2026-11-01T11:00:00|COMPLETED|cpu=8\n")
    (tmp_path / "c.yaml").write_text(_CLUSTER)
    result = runner.invoke(app, ["simulate", "--trace", str(tmp_path / "week.sacct"),
                                      "--cluster", str(tmp_path / "c.yaml"), "--policy", "fifo",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "week.sacct: dropped 1 row: job step" in result.output
    assert "week.sacct: dropped 2 rows: no GPUs" in result.output


@pytest.mark.parametrize("module", [
    "dlsched.cli", "dlsched.reproduce.cli", "dlsched.whatif.cli", "dlsched.serving.cli",
    "dlsched.serving.real.cli", "dlsched.perf.llm.cli", "dlsched.sweeps.cli",
    "dlsched.tenancy.cli", "dlsched.runtime.cli"])
def test_error_consoles_print_text_as_given(module: str) -> None:
    """rich reads ':x:' in a message as an emoji code (``--policy-opt srtf:x=1`` printed
    'srtf❌'): every command's error console prints names as they are."""
    import importlib

    console = importlib.import_module(module).console
    assert console._emoji is False


def test_listings_print_text_as_given(tmp_path: Path) -> None:
    """A policy's docstring (here a lab's own, ``--policy-file``) is listed as written."""
    from dlsched.scheduling import registry

    (tmp_path / "mine.py").write_text(
        "from dlsched.policies.fifo import fifo\n"
        "from dlsched.scheduling.registry import register_policy\n\n\n"
        "@register_policy('emoji-named')\ndef emoji_named():\n"
        "    '''Runs jobs :x: :smile: in order.'''\n    return fifo()\n")
    known, loaded = dict(registry._POLICIES), set(registry._LOADED)
    try:
        result = runner.invoke(app, ["policies", "--policy-file", str(tmp_path / "mine.py")],
                               env={"COLUMNS": "250"})
    finally:
        registry._POLICIES.clear()
        registry._POLICIES.update(known)
        registry._LOADED.clear()
        registry._LOADED.update(loaded)
    assert result.exit_code == 0, result.output
    assert "Runs jobs :x: :smile: in order." in result.output


def test_no_bar_and_no_blank_lines_when_not_on_a_terminal(tmp_path: Path) -> None:
    """Piped or redirected, the transient progress bar left two blank lines before the result
    line; it is shown on a terminal only."""
    output = invoke("simulate", "--trace", "pollux-1", "--cluster", "pollux-64", "--policy",
                    "fifo", "--out", str(tmp_path))
    lines = output.splitlines()
    assert lines[0].startswith("trace pollux-1") and lines[1].startswith("fifo: 160/160")


def test_a_replay_of_seconds_long_jobs_prints_seconds(tmp_path: Path) -> None:
    """A service's own history (jobs of seconds) printed "mean JCT 0.00 h, makespan 0.00 h"."""
    trace = tmp_path / "history.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration,queue\n"
                     "j1,1000,1,2,default\nj2,1001,1,4,default\n")
    output = invoke("simulate", "--trace", str(trace), "--cluster", "philly", "--policy",
                    "fifo", "--out", str(tmp_path / "out"))
    assert "mean JCT 3.0 s, makespan 5.0 s" in " ".join(output.split()), output


@pytest.mark.parametrize("args", [
    ["whatif"], ["what-if", "--trace", "x.csv"],
    ["simulate", "--trace", "runs/last-week.csv", "--policy", "fifo"],
    ["compare", "--trace", "last-week.csv", "--policies", "fifo,tiresias"],
], ids=["whatif", "what-if", "simulate-missing-trace", "compare-missing-trace"])
def test_a_what_if_without_its_input_points_to_history_export(tmp_path: Path,
                                                             args: list[str]) -> None:
    """`dlsched whatif` said "No such command 'whatif'", and a missing --trace FILE listed the
    38 bundled traces: neither told how a cluster's own history becomes a trace."""
    out = ["--out", str(tmp_path / "o")] if args[0] in ("simulate", "compare") else []
    result = runner.invoke(app, [*args, *out])
    text = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2, text
    assert "`dlsched history export --out FILE`" in text and "docs/what-if.md" in text, text


def test_the_trace_option_says_how_to_replay_a_clusters_own_history() -> None:
    for command in ("simulate", "compare"):
        text = " ".join(runner.invoke(app, [command, "--help"]).output.replace("│", " ").split())
        assert "A cluster's own history (what-if replay): `dlsched history export --out" in text


def test_the_summary_line_gives_each_duration_a_unit_by_size_and_labels_the_wall_time(
        tmp_path: Path) -> None:
    """philly-sample under fifo printed "mean JCT 5.07 h, makespan 765.09 h, mean total wait
    0.0 s, utilization 1.4%, 0.16 s -> DIR": hours beside seconds, and the run's wall time
    unlabelled among the schedule's durations. summary.json keeps its fields in seconds."""
    output = " ".join(invoke("simulate", "--trace", "philly-sample", "--policy", "fifo",
                             "--out", str(tmp_path)).split())
    assert ("fifo: 2000/2000 finished, mean JCT 5.07 h, makespan 31.88 d, mean total wait "
            "0.0 s, utilization 1.4%, simulated in ") in output, output
    assert re.search(r"simulated in \d+\.\d\d s -> ", output), output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["makespan"] == 2754311.0 and summary["jct_mean"] == pytest.approx(18251.4495)
    assert "wall_seconds" in summary


@pytest.mark.parametrize("command", [
    ["sweep", "--policies", "fifo", "--seeds", "0", "--cluster", "philly", "--workers", "1",
     "--set", "limit=20", "--set", "services=svc.yaml"],
], ids=["sweep"])
def test_services_are_refused_where_they_are_not_run(tmp_path: Path, command: list[str]) -> None:
    """A sweep's `--set services=FILE` ran the training trace alone and wrote no
    services.json, without a word (`compare` runs them: serving/cli.py)."""
    args = [*command, "--trace", "philly-sample", "--out", str(tmp_path / "o")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert ("--services svc.yaml: only `dlsched simulate` and `dlsched compare` run inference "
            "services") in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_compare_refuses_a_policy_listed_twice(tmp_path: Path) -> None:
    """Both runs wrote DIR/fifo, and the report had two rows of the one left."""
    result = runner.invoke(app, ["compare", "--trace", "pollux-1", "--cluster", "pollux-64",
                                 "--policies", "fifo,srtf,fifo", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "--policies: fifo listed twice" in " ".join(result.output.split())
    assert not (tmp_path / "fifo").exists()


def test_a_compared_policys_config_yaml_repeats_it_in_its_own_folder(tmp_path: Path) -> None:
    """DIR/fifo/config.yaml said `out: DIR`: `simulate --config` on it wrote a single run's
    summary.json over the comparison's (one entry per policy) and its files beside them."""
    invoke("compare", "--trace", "pollux-1", "--cluster", "pollux-64", "--policies",
           "fifo,srtf", "--limit", "30", "--out", str(tmp_path))
    compared = (tmp_path / "summary.json").read_text()
    jobs = (tmp_path / "fifo" / "jobs.csv").read_text()
    invoke("simulate", "--config", str(tmp_path / "fifo" / "config.yaml"))
    assert (tmp_path / "summary.json").read_text() == compared
    assert not (tmp_path / "jobs.csv").exists()
    assert (tmp_path / "fifo" / "jobs.csv").read_text() == jobs


# -- --sacct-queue: a Slurm job's queue from its account ----------------------------------
# One partition, two accounts with a strict quota of 2 of the node's 4 GPUs each: vision's
# second job waits for its first, though nlp's quota is idle.
_ACCOUNTS = """JobID|User|Account|Partition|Submit|Start|End|State|AllocTRES
1|ana|vision|gpu|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T11:00:00|COMPLETED|gres/gpu=2
2|ana|vision|gpu|2026-11-01T10:00:00|2026-11-01T10:00:00|2026-11-01T11:00:00|COMPLETED|gres/gpu=2
"""
_PER_ACCOUNT = """flavors: [{name: a100}]
cluster_queues:
  - {name: vision, quotas: {a100: {gpu: 2}}}
  - {name: nlp, quotas: {a100: {gpu: 2}}}
"""


def test_sacct_queue_account_replays_quotas_per_account(tmp_path: Path) -> None:
    """The queue was always the partition: a tenant file of one queue per account (how Slurm
    sites set quotas and fair share) could not be used with a sacct export."""
    for name, text in (("week.sacct", _ACCOUNTS), ("q.yaml", _PER_ACCOUNT),
                       ("c.yaml", "name: one\nnodes:\n  - {name: n, gpu_type: A100, gpus: 4}\n")):
        (tmp_path / name).write_text(text)
    args = ["simulate", "--trace", str(tmp_path / "week.sacct"), "--cluster",
            str(tmp_path / "c.yaml"), "--policy", "fifo", "--tenants", str(tmp_path / "q.yaml"),
            "--out", str(tmp_path / "out")]
    by_partition = runner.invoke(app, args)
    assert by_partition.exit_code == 2
    assert "use queue 'gpu' (2 jobs)" in " ".join(by_partition.output.split())
    invoke(*args, "--sacct-queue", "account")
    assert _first_starts(tmp_path / "out") == [0.0, 3600.0]
    assert "sacct_queue: account" in (tmp_path / "out" / "config.yaml").read_text()
    made = invoke("tenants", str(tmp_path / "week.sacct"), "--cluster", str(tmp_path / "c.yaml"),
                  "--sacct-queue", "account")
    assert "name: vision" in made and "name: gpu" not in made and "--sacct-queue account:" in made
    bad = runner.invoke(app, [*args, "--sacct-queue", "cluster"])
    assert bad.exit_code == 2
    assert "--sacct-queue: 'cluster' is not one of partition, account, qos, user" in bad.output


@pytest.mark.parametrize("command", [["simulate", "--trace"], ["compare", "--trace"],
                                     ["simulate", "--services"]],
                         ids=["simulate", "compare", "services"])
def test_a_run_stopped_by_a_bad_input_leaves_no_empty_output_folder(
        tmp_path: Path, command: list[str]) -> None:
    """The output folder is checked up front, but a run that stops at its trace (or services
    file) wrote nothing: the folders the check made go again; a folder that was there stays."""
    made = tmp_path / "new" / "deeper"
    result = runner.invoke(app, [*command, str(tmp_path / "missing.csv"), "--out", str(made)])
    assert result.exit_code != 0 and "missing.csv" in result.output
    assert not (tmp_path / "new").exists()
    there = tmp_path / "there"
    there.mkdir()
    result = runner.invoke(app, [*command, str(tmp_path / "missing.csv"), "--out", str(there)])
    assert result.exit_code != 0 and there.is_dir()
