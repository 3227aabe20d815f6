"""Policies from outside the package: ``--policy-file`` (a .py file or a module name)."""

from __future__ import annotations

import csv
import multiprocessing
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched import compare_pool, notebook
from dlsched.cli import app
from dlsched.errors import ConfigError
from dlsched.run_config import RunConfig
from dlsched.scheduling import registry
from dlsched.scheduling.registry import build_policy, load_policy_files, policies

LARGEST = '''"""Largest job first, a lab's own policy."""
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy


class MostGpusFirst:
    name = "most-gpus-first"
    static = True

    def sort_key(self, state, job):
        return (-job.spec.num_gpus, job.spec.submit_time, job.job_id)


@register_policy("largest-first")
def largest_first(strict: bool = False, placement: str = "consolidated") -> Profile:
    """Largest job first (most GPUs), non-preemptive."""
    return Profile("largest-first", MostGpusFirst(), placement=placement, strict_fifo=strict)
'''
# One node of 4 GPUs: A (4 GPUs) runs 0-10; B (1 GPU, at 1) and C (4 GPUs, at 2) wait.
# largest-first starts C at 10 and B at 20; fifo starts B at 10 and C at 20.
TRACE = "job_id,submit_time,num_gpus,duration,queue\nA,0,4,10,q\nB,1,1,10,q\nC,2,4,10,q\n"
CLUSTER = "name: one\nnode_groups:\n  - {count: 1, gpus: 4, gpu_type: V100}\n"


@pytest.fixture(autouse=True)
def _registry_as_it_was() -> Iterator[None]:
    """Each test's policies leave the registry with the test."""
    policies()
    known, loaded = dict(registry._POLICIES), set(registry._LOADED)
    yield
    registry._POLICIES.clear()
    registry._POLICIES.update(known)
    registry._LOADED.clear()
    registry._LOADED.update(loaded)


def _files(tmp_path: Path) -> tuple[Path, Path, Path]:
    (tmp_path / "largest.py").write_text(LARGEST)
    (tmp_path / "jobs.csv").write_text(TRACE)
    (tmp_path / "one.yaml").write_text(CLUSTER)
    return tmp_path / "largest.py", tmp_path / "jobs.csv", tmp_path / "one.yaml"


def _starts(jobs_csv: Path) -> dict[str, float]:
    with jobs_csv.open() as f:
        return {row["job_id"]: float(row["first_start"]) for row in csv.DictReader(f)}


def test_a_file_registers_its_policies_once(tmp_path: Path) -> None:
    policy, _, _ = _files(tmp_path)
    load_policy_files([str(policy)])
    load_policy_files([str(policy)])  # again: a no-op, not "registered twice"
    assert build_policy("largest-first").name == "largest-first"
    assert policies()["largest-first"].summary == "Largest job first (most GPUs), non-preemptive."


def test_repeated_and_comma_separated_files_are_all_loaded(tmp_path: Path) -> None:
    """A repeated ``--policy-file`` kept only the last (an option's last value wins)."""
    policy, trace, cluster = _files(tmp_path)
    (tmp_path / "second.py").write_text(LARGEST.replace("largest-first", "second-first")
                                        .replace("def largest_first", "def second_first"))
    for flags in (["--policy-file", str(policy), "--policy-file", str(tmp_path / "second.py")],
                  ["--policy-file", f"{policy},{tmp_path / 'second.py'}"]):
        result = CliRunner().invoke(app, [
            "compare", "--trace", str(trace), "--format", "dlsched-history", "--cluster",
            str(cluster), "--policies", "largest-first,second-first", *flags, "--workers", "1",
            "--out", str(tmp_path / "out")])
        assert result.exit_code == 0, result.output
    listed = CliRunner().invoke(app, ["policies", *flags], env={"COLUMNS": "200"})
    assert "largest-first" in listed.output and "second-first" in listed.output


def test_simulate_runs_the_files_policy(tmp_path: Path) -> None:
    policy, trace, cluster = _files(tmp_path)
    for name in ("largest-first", "fifo"):
        result = CliRunner().invoke(app, [
            "simulate", "--trace", str(trace), "--format", "dlsched-history", "--cluster",
            str(cluster), "--policy", name, "--policy-file", str(policy), "--restart-overhead",
            "0", "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    assert _starts(tmp_path / "largest-first/jobs.csv") == {"A": 0.0, "B": 20.0, "C": 10.0}
    assert _starts(tmp_path / "fifo/jobs.csv") == {"A": 0.0, "B": 10.0, "C": 20.0}
    assert "policy_files:\n- " in (tmp_path / "fifo/config.yaml").read_text()


@pytest.mark.parametrize("command", ["simulate", "compare"])
@pytest.mark.parametrize("option", ["strict=true", "largest-first:strict=true"])
def test_a_files_policy_takes_its_options(tmp_path: Path, command: str, option: str) -> None:
    """``--policy-opt strict=true`` for a file's policy stopped the run with '--policy-opt
    strict: no policy of largest-first has it': options were checked before the file was
    loaded."""
    policy, trace, cluster = _files(tmp_path)
    which = ["--policy", "largest-first"] if command == "simulate" else [
        "--policies", "largest-first,fifo"]
    result = CliRunner().invoke(app, [
        command, "--trace", str(trace), "--format", "dlsched-history", "--cluster",
        str(cluster), *which, "--policy-file", str(policy), "--policy-opt", option,
        "--restart-overhead", "0", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    out = tmp_path / "out" / ("largest-first" if command == "compare" else "")
    assert _starts(out / "jobs.csv") == {"A": 0.0, "B": 20.0, "C": 10.0}


def test_sweep_takes_policy_files_like_simulate_and_compare(tmp_path: Path) -> None:
    """``dlsched sweep --policy-file F`` was 'No such option' (only ``--set policy_files=F``,
    undocumented, reached the runs)."""
    policy, trace, cluster = _files(tmp_path)
    result = CliRunner().invoke(app, [
        "sweep", "--trace", str(trace), "--cluster", str(cluster), "--policies",
        "largest-first,fifo", "--policy-file", str(policy), "--set", "format=dlsched-history",
        "--set", "restart_overhead=0", "--vary", "largest-first:strict=true,false",
        "--workers", "1", "--no-plots", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    with (tmp_path / "out/results.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["policy"] for r in rows] == ["largest-first"] * 2 + ["fifo"] * 2  # fifo: once
    key = rows[0]["key"]
    assert _starts(tmp_path / "out/runs" / key / "jobs.csv") == {"A": 0.0, "B": 20.0, "C": 10.0}


def test_a_started_worker_process_imports_the_file_itself(tmp_path: Path,
                                                          monkeypatch) -> None:
    """A comparison's workers from a fork server or spawned (not forked: they do not inherit
    the registry) build the file's policy from the run's config."""
    policy, trace, cluster = _files(tmp_path)
    monkeypatch.setattr(compare_pool, "pool_context",
                        lambda: multiprocessing.get_context("spawn"))
    config = RunConfig(trace=str(trace), format="dlsched-history", cluster=str(cluster),
                       policies=("largest-first", "fifo"), policy_files=(str(policy),),
                       restart_overhead=0.0)
    outcomes = notebook.execute_runs(config, tmp_path / "out", compare=True, workers=2)
    assert [o.summary.policy for o in outcomes] == ["largest-first", "fifo"]
    assert _starts(tmp_path / "out/largest-first/jobs.csv")["C"] == 10.0


@pytest.mark.parametrize(("text", "message"), [
    ("x = 1\ny = undefined_name\n", r"broken.py: line 2: NameError: name 'undefined_name'"),
    ("def f(:\n", r"broken.py: line 1: SyntaxError"),
    ('from dlsched.scheduling.registry import register_policy\n'
     'from dlsched.policies.fifo import fifo\n'
     '@register_policy("mine-first")\ndef mine():\n    """ok"""\n    return fifo()\n'
     '@register_policy("fifo")\ndef again():\n    return fifo()\n',
     r"broken.py: line 7: ValueError: policy 'fifo' registered twice"),
])
def test_a_bad_file_is_named_with_its_line_and_leaves_the_registry(
        tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "broken.py").write_text(text)
    before = set(policies())
    with pytest.raises(ConfigError, match=message):
        load_policy_files([str(tmp_path / "broken.py")])
    assert set(policies()) == before  # "mine-first", registered before the clash, is gone


def test_missing_file_and_module_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"policy file .*nope.py: no such file"):
        load_policy_files([str(tmp_path / "nope.py")])
    with pytest.raises(ConfigError, match=r"policy file no_such_lab.policies: "
                                          r"ModuleNotFoundError"):
        load_policy_files(["no_such_lab.policies"])


def test_policies_command_lists_a_files_policy(tmp_path: Path) -> None:
    policy, _, _ = _files(tmp_path)
    result = CliRunner().invoke(app, ["policies", "--policy-file", str(policy)],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "largest-first" in result.output


def test_a_builder_that_returns_no_profile_is_named(tmp_path: Path) -> None:
    """A builder that forgot its return stopped the run with \"'NoneType' object has no
    attribute 'options'\" from the registry."""
    (tmp_path / "lab.py").write_text(
        'from dlsched.scheduling.registry import register_policy\n\n\n'
        '@register_policy("forgot")\ndef forgot(placement: str = "consolidated"):\n'
        '    """Forgot to return its profile."""\n')
    load_policy_files([str(tmp_path / "lab.py")])
    with pytest.raises(ConfigError, match=r"^policy forgot: its builder forgot\(\) returned "
                                          r"NoneType, not a Profile"):
        build_policy("forgot")


@pytest.mark.parametrize("command", [["simulate", "--policy", "largest-first"],
                                     ["compare", "--policies", "largest-first,fifo",
                                      "--workers", "1"],
                                     ["compare", "--policies", "largest-first,fifo",
                                      "--workers", "2"],
                                     ["sweep", "--policies", "largest-first,fifo",
                                      "--workers", "1"],
                                     ["sweep", "--policies", "largest-first,fifo",
                                      "--workers", "2"]],
                         ids=["simulate", "compare-in-process", "compare-in-workers",
                              "sweep-in-process", "sweep-in-workers"])
def test_a_policy_files_own_bug_is_one_line_at_its_line(tmp_path: Path,
                                                        command: list[str]) -> None:
    """A typo in a policy file's sort_key (job.spec.num_gpu) met while running printed a
    150-line traceback through the core and the process pool."""
    source, said = _run_with_a_typo(tmp_path, command)
    assert (f"error: policy file {source}: line 11 in sort_key: AttributeError: 'JobSpec' "
            "object has no attribute 'num_gpu'") in said, said


@pytest.mark.parametrize("command", [["simulate", "--policy", "largest-first"],
                                     ["compare", "--policies", "largest-first,fifo",
                                      "--workers", "2"],
                                     ["sweep", "--policies", "largest-first,fifo",
                                      "--workers", "2"]],
                         ids=["simulate", "compare-in-workers", "sweep-in-workers"])
def test_a_policy_files_bug_names_the_policy_the_job_and_the_time(
        tmp_path: Path, command: list[str]) -> None:
    """The line named the file's line only: not which policy (a compare of two lab
    policies from one file), nor the job and the cycle's time the code was handling."""
    _, said = _run_with_a_typo(tmp_path, command)
    assert re.search(r"'num_gpu' \(policy largest-first, job A, t=0 s\)$", said), said


def test_a_modules_own_bug_is_one_line_too(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """``--policy-file mylab.policies`` (an installed module, by name): its sort_key's error
    was a full traceback through the core; only ``.py`` files were searched for."""
    _, jobs, cluster = _files(tmp_path)
    package = tmp_path / "site" / "lab_s34r"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "policies.py").write_text(
        LARGEST.replace("static = True", "static = False")
        .replace("-job.spec.num_gpus", "-job.spec.num_gpu"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    result = CliRunner().invoke(app, ["simulate", "--policy", "largest-first", "--trace",
                                      str(jobs), "--cluster", str(cluster), "--policy-file",
                                      "lab_s34r.policies", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert ("error: policy file lab_s34r.policies: line 11 in sort_key: "
            "AttributeError: 'JobSpec' object has no attribute 'num_gpu'") in said, said


def _run_with_a_typo(tmp_path: Path, command: list[str]) -> tuple[Path, str]:
    """``command`` with a policy file whose sort_key reads ``job.spec.num_gpu`` (a typo):
    the file and the one-line output, its white space folded; the exit code is 2."""
    source, jobs, cluster = _files(tmp_path)
    source.write_text(LARGEST.replace("static = True", "static = False")
                      .replace("-job.spec.num_gpus", "-job.spec.num_gpu"))
    result = CliRunner().invoke(app, [*command, "--trace", str(jobs), "--cluster",
                                      str(cluster), "--policy-file", str(source), "--out",
                                      str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    return source, " ".join(result.output.split())
