"""Registering an experiment, choosing its cases and variants, and the CLI around it."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.errors import ConfigError
from dlsched.reproduce import registry
from dlsched.reproduce.published import Reference
from dlsched.reproduce.registry import ExperimentOptions, get_experiment, register_experiment
from dlsched.reproduce.rows import Measured
from dlsched.reproduce.runner import join

runner = CliRunner()


@pytest.fixture
def toy() -> Iterator[str]:
    @register_experiment("toy-test", "a toy", cases=("a", "b", "c"), default_cases=("a",),
                         variants=("1", "2"), options={"scale": "multiply values"},
                         seeded=True)
    def run(options: ExperimentOptions) -> Iterator[Measured]:
        scale = float(options.options.get("scale", "1"))
        for case in options.cases:
            for variant in options.variants:
                seeds = options.seeds or (0,)
                yield Measured(f"{case}@{variant}", "fifo", "jct_mean_s",
                               scale * (len(case) + int(variant) + sum(seeds)))

    yield "toy-test"
    registry._EXPERIMENTS.pop("toy-test")


@pytest.mark.parametrize(("asked", "expected"), [
    pytest.param(None, ("a",), id="default"),
    pytest.param(("all",), ("a", "b", "c"), id="all"),
    pytest.param(("c", "b"), ("c", "b"), id="chosen"),
])
def test_select_cases(toy: str, asked: tuple[str, ...] | None,
                      expected: tuple[str, ...]) -> None:
    assert get_experiment(toy).select("cases", asked) == expected


def test_unknown_case_lists_the_known(toy: str) -> None:
    with pytest.raises(ConfigError, match=r"--cases d: .*\(a, b, c; or 'all'\)"):
        get_experiment(toy).select("cases", ("d",))


def test_unknown_experiment_and_option(toy: str) -> None:
    with pytest.raises(ConfigError, match="no experiment 'nope'.*pollux-osdi21"):
        get_experiment("nope")
    with pytest.raises(ConfigError, match="--opt speed: .*scale"):
        get_experiment(toy).check_options({"speed": "2"})


def test_join_attaches_references_by_key() -> None:
    rows = join("e", [Measured("c", "p", "m", 110.0), Measured("c", "q", "m", 5.0)],
                {("e", "c", "p", "m"): Reference(100.0, "paper Table 2")})
    assert [(r.reference, r.source) for r in rows] == [(100.0, "paper Table 2"), (None, "")]
    assert rows[0].rel_diff == pytest.approx(0.1)


def test_cli_writes_the_contract_files(toy: str, tmp_path: Path) -> None:
    result = runner.invoke(app, ["reproduce", toy, "--out", str(tmp_path), "--cases", "a,b",
                                 "--variants", "2", "--seeds", "1,2", "--opt", "scale=2"])
    assert result.exit_code == 0, result.output
    with (tmp_path / "reproduce.csv").open() as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["experiment", "case", "policy", "metric", "dlsched", "reference",
                       "rel_diff", "source"]
    assert [(r[1], r[4], r[5]) for r in rows[1:]] == [("a@2", "12", ""), ("b@2", "12", "")]
    assert "<svg" in (tmp_path / "reproduce.html").read_text()
    assert (tmp_path / "reproduce.svg").read_text().startswith("<svg")


def test_cli_lists_and_rejects(toy: str) -> None:
    listed = runner.invoke(app, ["reproduce", "--list"], env={"COLUMNS": "80"})
    assert listed.exit_code == 0 and "pollux-osdi21" in listed.output and toy in listed.output
    assert "elasticflow-asplos23" in listed.output  # whole at 80 columns, not "elasticflow-…"
    bad = runner.invoke(app, ["reproduce", toy, "--variants", "3"])
    assert bad.exit_code == 2 and "--variants 3" in bad.output


@pytest.mark.parametrize(("experiment", "option", "message"), [
    pytest.param("llama3-405b", "restart_minutes=abc", "--opt restart_minutes: 'abc' is not a "
                 "number >= 0", id="llama3-restart-text"),
    pytest.param("llama3-405b", "restart_minutes=-5", "'-5' is not a number >= 0",
                 id="llama3-restart-negative"),
    pytest.param("llama3-405b", "spares=1.5", "--opt spares: '1.5' is not a whole number >= 0",
                 id="llama3-spares-fraction"),
    pytest.param("llama3-405b", "spares=-1", "'-1' is not a whole number >= 0",
                 id="llama3-spares-negative"),
    pytest.param("llama3-405b-tenants", "days=-1", "--opt days: '-1' is not a number > 0",
                 id="tenants-days"),
    pytest.param("llama3-405b-tenants", "research_rate=x", "--opt research_rate: 'x'",
                 id="tenants-rate"),
    pytest.param("tiresias-nsdi19", "limit=ten", "--opt limit: 'ten' is not a whole number",
                 id="tiresias-limit"),
    pytest.param("elasticflow-asplos23", "limit=x", "--opt limit: 'x' is not a whole number",
                 id="elasticflow-limit"),
    pytest.param("sia-sosp23", "limit=1e3", "--opt limit: '1e3' is not a whole number",
                 id="sia-limit"),
    pytest.param("fgd-atc23", "arrived=50,a", "--opt arrived: '50,a' is not comma-separated",
                 id="fgd-arrived"),
    pytest.param("fgd-atc23", "repeats=x", "--opt repeats: 'x' is not a whole number",
                 id="fgd-repeats"),
    # Pods arrive up to 130% of the GPUs: a share beyond ran every seed for no cell.
    pytest.param("fgd-atc23", "arrived=100,500", "--opt arrived: 500 is outside 1..130",
                 id="fgd-arrived-beyond"),
    pytest.param("fgd-atc23", "arrived=0", "--opt arrived: 0 is outside 1..130",
                 id="fgd-arrived-zero"),
])
def test_bad_numeric_option_is_a_one_line_error(experiment: str, option: str,
                                                message: str, tmp_path: Path) -> None:
    """Each was a ValueError traceback (int('x')), or, for a negative restart or spare count,
    a run with negative restart GPU-hours or a cluster holding back -1 nodes."""
    result = runner.invoke(app, ["reproduce", experiment, "--opt", option, "--workers", "1",
                                 "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and message in " ".join(result.output.split())


@pytest.mark.parametrize(("call", "meant"), [
    (lambda: get_experiment("tiresias-nsdi19x"), "tiresias-nsdi19"),
    (lambda: get_experiment("llama3-405b").select("cases", ("yuong",)), "young"),
    (lambda: get_experiment("llama3-405b").check_options({"spare": "1"}), "spares"),
], ids=["experiment", "case", "option"])
def test_a_mistyped_name_names_the_one_meant(call, meant: str) -> None:  # noqa: ANN001
    """'reproduce tiresias-nsdi19x', '--cases yuong', '--opt spare=1' listed the known names
    without saying which was meant."""
    with pytest.raises(ConfigError, match=f"; did you mean '{meant}'\\?$"):
        call()
