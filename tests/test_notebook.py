"""The notebook API (issue 18 item 5): ``dlsched.simulate`` and ``compare`` go through the
CLI's code path, so their tables equal the CLI's files for the same arguments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import dlsched
from dlsched.cli import app
from dlsched.errors import ConfigError
from dlsched.wording import duration_text

TEXT = ("job_id", "queue", "status", "pending_reason", "policy", "trace", "cluster", "version")


def cli_table(path: Path) -> pd.DataFrame:
    """A CSV the CLI wrote, its text columns as text (an empty cell is NaN)."""
    return pd.read_csv(path, dtype=dict.fromkeys(TEXT, str), keep_default_na=False,
                       na_values=[""])


ARGS = {"trace": "pollux-1", "cluster": "pollux-64", "policy": "tiresias", "limit": 60,
        "seed": 3}


def test_simulate_returns_the_clis_jobs_csv(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["simulate", "--trace", "pollux-1", "--cluster",
                                      "pollux-64", "--policy", "tiresias", "--limit", "60",
                                      "--seed", "3", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    run = dlsched.simulate(**ARGS)
    pd.testing.assert_frame_equal(run.jobs, cli_table(tmp_path / "jobs.csv"))
    pd.testing.assert_frame_equal(run.timeline, cli_table(tmp_path / "timeline.csv"))
    cli_summary = json.loads((tmp_path / "summary.json").read_text())
    assert run.summary["jct_mean"] == cli_summary["jct_mean"]
    assert run.out_dir is None and len(run.jobs) == 60


def test_compare_runs_each_policy_and_writes_the_report(tmp_path: Path) -> None:
    result = dlsched.compare("pollux-1", "pollux-64", ["fifo", "srtf"], limit=30,
                             out=tmp_path)
    assert list(result.summary.index) == ["fifo", "srtf"]
    assert result.report == tmp_path / "report.html" and result.report.exists()
    assert result["srtf"].jobs.equals(cli_table(tmp_path / "srtf" / "jobs.csv"))


def _compare_both_ways(tmp_path: Path) -> tuple[Path, Path]:
    """The same comparison (fifo and srtf, 30 jobs of pollux-1) by the command into
    tmp_path/cli and by ``dlsched.compare`` into tmp_path/notebook."""
    cli, notebook = tmp_path / "cli", tmp_path / "notebook"
    result = CliRunner().invoke(app, ["compare", "--trace", "pollux-1", "--cluster",
                                      "pollux-64", "--policies", "fifo,srtf", "--limit", "30",
                                      "--out", str(cli)])
    assert result.exit_code == 0, result.output
    dlsched.compare("pollux-1", "pollux-64", ["fifo", "srtf"], limit=30, out=notebook)
    return cli, notebook


def test_compare_writes_the_clis_config_yaml(tmp_path: Path) -> None:
    """Each policy's config.yaml said `out: runs/latest` from the notebook, the compare's
    folder from the command."""
    cli, notebook = _compare_both_ways(tmp_path)
    for policy in ("fifo", "srtf"):
        ours = (notebook / policy / "config.yaml").read_text()
        assert ours == (cli / policy / "config.yaml").read_text().replace(str(cli),
                                                                           str(notebook))
        assert f"out: {notebook}" in ours


def test_compare_writes_the_clis_summary_json(tmp_path: Path) -> None:
    """The command wrote DIR/summary.json (each policy's summary), ``compare(out=DIR)`` only
    report.html."""
    from dlsched.report.output import deterministic_view

    cli, notebook = _compare_both_ways(tmp_path)
    ours, theirs = (json.loads((folder / "summary.json").read_text())
                    for folder in (notebook, cli))
    assert list(ours) == list(theirs) == ["fifo", "srtf"]
    for policy in ours:
        assert deterministic_view(ours[policy]) == deterministic_view(theirs[policy])


@pytest.mark.parametrize(("options", "message"), [
    ({"polcy_options": {}}, "unknown option 'polcy_options' \\(did you mean 'policy_options'"),
    ({"jobs_format": "xml"}, "jobs_format: 'xml' is not one of csv, parquet"),
    # policies= replaced policy=: policy="srtf", policies=["fifo"] ran fifo without a word
    ({"policy": "srtf", "policies": ["fifo"]}, "simulate runs one policy=NAME; policies= is"),
    # simulate's keyword is policy=: the hint named policies=, which simulate then refused
    ({"polcy": "srtf"}, "unknown option 'polcy' \\(did you mean 'policy'\\?\\); the options "
                        "are [a-z_, ]*, policy, policy_files, policy_options, "),
    # a policy option's typo was reported as "--policy-opt queu: ...", a flag never typed here
    ({"policy": "tiresias", "policy_options": {"thresholdz": "1"}},
     "^policy_options thresholdz: no policy of tiresias has it \\(did you mean 'thresholds'"),
    ({"policy": "tiresias", "policy_options": {"fifo:x": "1"}},
     "^policy_options fifo:x: policy 'fifo' is not being run"),
    ({"throughput": "bogus"}, "^throughput: unknown throughput model 'bogus'"),
], ids=["typo", "bad-value", "policies-is-compares", "policy-typo-names-policy",
        "policy-option-typo", "policy-option-target", "throughput"])
def test_bad_options_name_the_keyword(options: dict, message: str) -> None:
    with pytest.raises((TypeError, ConfigError), match=message):
        dlsched.simulate(limit=5, **options)


def test_import_dlsched_loads_no_pandas_or_simulator() -> None:
    code = ("import sys, dlsched; print(sorted(m for m in ('pandas', 'dlsched.sim', "
            "'dlsched.notebook') if m in sys.modules))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "[]"


def test_the_example_notebook_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    import runpy

    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.setenv("DLSCHED_EXAMPLE_JOBS", "20")
    names = runpy.run_path(str(Path(__file__).parents[1] / "examples" / "notebook.py"))
    assert set(names["table"]["policy"]) == {"fifo", "tiresias"}
    assert len(names["run"].jobs) == 20


SACCT = """JobID|Partition|Submit|Start|End|State|AllocTRES
4101|2024|2026-11-02T09:00:00|2026-11-02T09:00:00|2026-11-02T10:00:00|COMPLETED|cpu=8,gres/gpu=1
4102|2024|2026-11-02T09:30:00|2026-11-02T09:30:00|2026-11-02T10:30:00|FAILED|cpu=8,gres/gpu=2
"""


def test_jobs_ids_and_queues_that_look_like_numbers_stay_text(tmp_path: Path) -> None:
    """Slurm job ids (4101) and a partition named 2024 were read back as int64, and an all-empty
    pending_reason as float64: ids are text whatever they look like."""
    trace = tmp_path / "week.sacct"
    trace.write_text(SACCT)
    with pytest.warns(UserWarning, match="as recorded, its 2 jobs"):
        jobs = dlsched.simulate(str(trace), "tiny-4", "fifo").jobs
    assert jobs["job_id"].tolist() == ["4101", "4102"]
    assert jobs["queue"].tolist() == ["2024", "2024"]
    text = ["job_id", "queue", "status", "pending_reason", "version"]
    assert all(pd.api.types.is_string_dtype(jobs[c]) for c in text), jobs.dtypes
    assert jobs["submit_time"].dtype == "float64" and jobs["pending_reason"].isna().all()


def test_sacct_queue_takes_the_queue_from_the_account(tmp_path: Path) -> None:
    """``sacct_queue`` (``--sacct-queue``) reaches the notebook too: a sacct export's queue
    from its Account field, a job whose Account is empty in ``default``."""
    trace = tmp_path / "week.sacct"
    trace.write_text(SACCT.replace("JobID|", "JobID|Account|").replace("4101|", "4101|nlp|")
                     .replace("4102|", "4102||"))
    with pytest.warns(UserWarning, match="as recorded"):
        jobs = dlsched.simulate(str(trace), "tiny-4", "fifo", sacct_queue="account").jobs
    assert jobs["queue"].tolist() == ["nlp", "default"]



def test_compare_with_tenants_is_indexed_by_the_policies_asked_for() -> None:
    """With tenants= a run's label is 'fifo+tenants': cmp['fifo'] raised KeyError."""
    tenants = Path(__file__).parents[1] / "examples" / "tenants" / "philly-vcs.yaml"
    result = dlsched.compare("philly-sample", "philly", ["fifo", "srtf"], limit=20,
                             tenants=str(tenants))
    assert list(result.runs) == ["fifo", "srtf"] and list(result.summary.index) == ["fifo", "srtf"]
    assert result["srtf"].summary["policy"] == "srtf+tenants"



def test_reprs_are_one_line_per_run_not_the_tables() -> None:
    result = dlsched.compare("pollux-1", "pollux-64", ["fifo", "srtf"], limit=10)
    assert repr(result["fifo"]) == ("<SimulationRun fifo on pollux-1 / pollux-64: "
                                    f"10/10 jobs finished, mean JCT "
                                    f"{duration_text(result['fifo'].summary['jct_mean'])}>")
    assert repr(result).splitlines()[1].startswith("  fifo: 10/10 jobs finished")
    assert len(repr(result).splitlines()) == 3


def test_the_notebook_refuses_services_rather_than_drop_them() -> None:
    import pytest as _pytest

    from dlsched.errors import ConfigError
    from dlsched.notebook import simulate

    with _pytest.raises(ConfigError, match="only `dlsched simulate` and `dlsched compare`"):
        simulate(trace="philly-sample", cluster="philly", policy="fifo", limit=10,
                 services="svc.yaml")


def test_an_out_that_cannot_be_a_folder_is_refused_before_the_run(tmp_path: Path) -> None:
    """``out=`` naming a file was a FileExistsError once the simulation had run; the command
    says so in one line before it."""
    taken = tmp_path / "taken"
    taken.write_text("")
    with pytest.raises(ConfigError, match="^out .*taken: cannot create the folder"):
        dlsched.simulate("pollux-1", "pollux-64", "fifo", limit=5, out=taken)
    with pytest.raises(ConfigError, match="cannot create the folder"):
        dlsched.compare("pollux-1", "pollux-64", ["fifo", "srtf"], limit=5, out=taken / "x")


def test_a_run_stopped_by_a_bad_input_leaves_no_empty_folder(tmp_path: Path) -> None:
    with pytest.raises(ConfigError):
        dlsched.simulate("pollux-1", "pollux-64", "nope", out=tmp_path / "a" / "b")
    assert list(tmp_path.iterdir()) == []


def test_a_run_file_holds_where_no_keyword_is_given(tmp_path: Path) -> None:
    """simulate(config=FILE) ran philly-sample on philly with fifo whatever the file said:
    its defaults were passed as keywords, which override the file."""
    run_file = tmp_path / "run.yaml"
    run_file.write_text("trace: pollux-1\ncluster: pollux-64\npolicies: [srtf]\nlimit: 10\n")
    run = dlsched.simulate(config=run_file)
    assert (run.policy, run.config.trace, run.config.cluster) == ("srtf", "pollux-1",
                                                                  "pollux-64")
    assert dlsched.simulate(config=run_file, policy="fifo").policy == "fifo"
    assert list(dlsched.compare(config=run_file).runs) == ["srtf"]
    assert list(dlsched.compare(config=run_file, policies="fifo,sjf").runs) == ["fifo", "sjf"]


def test_a_policy_listed_twice_names_the_keyword() -> None:
    with pytest.raises(ConfigError, match="^policies: fifo listed twice"):
        dlsched.compare(policies=["fifo", "fifo"], limit=5)


def test_the_defaults_without_a_run_file() -> None:
    assert dlsched.simulate(limit=5).config.trace == "philly-sample"
    result = dlsched.compare(limit=5)
    assert list(result.runs) == ["fifo", "tiresias"] and result.config.cluster == "philly"


@pytest.mark.parametrize("text", ["fifo, srtf", "fifo,srtf,", " fifo , srtf"],
                         ids=["space", "trailing-comma", "spaces"])
def test_policies_as_text_read_as_the_command_reads_them(text: str) -> None:
    """``compare(..., "fifo, srtf")`` and ``sweep(..., "fifo, srtf")`` refused "unknown policy
    ' srtf'" (and '' for a trailing comma), where ``--policies "fifo, srtf"`` runs both."""
    assert list(dlsched.compare("pollux-1", "pollux-64", text, limit=5).runs) == ["fifo", "srtf"]
    table = dlsched.sweep(["pollux-1"], ["pollux-64"], text, seeds=[0], options={"limit": 5},
                          workers=1)
    assert sorted(table["policy"]) == ["fifo", "srtf"]
