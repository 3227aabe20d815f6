"""A sweep's grid: expansion, keys, synthetic traces, option axes, parsing."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import Result

from dlsched.errors import ConfigError
from dlsched.sweeps.grid import SweepSpec, expand, parse_assignments, parse_seeds, run_key


def run_sweep_file(path: Path, tmp_path: Path, *extra: str) -> Result:
    """``dlsched sweep --config PATH --out TMP/out [extra]`` through typer's runner."""
    from typer.testing import CliRunner

    from dlsched.cli import app

    return CliRunner().invoke(app, ["sweep", "--config", str(path), "--out",
                                    str(tmp_path / "out"), *extra])


def test_the_grid_is_the_product_of_its_axes() -> None:
    runs = expand(SweepSpec(("pollux-1", "synthetic:philly-sample"), ("pollux-64",),
                            ("fifo", "tiresias"), (0, 1, 2), {"limit": 20}))
    assert len(runs) == 2 * 2 * 3
    synthetic = runs[-1].config
    assert (synthetic.trace, synthetic.synthetic_from, synthetic.seed) == (
        "synthetic", "philly-sample", 2)
    assert all(r.config.limit == 20 for r in runs)
    assert len({r.key for r in runs}) == len(runs)


def test_a_policy_option_axis_applies_to_its_policy_only() -> None:
    runs = expand(SweepSpec(("pollux-1",), ("pollux-64",), ("fifo", "tiresias"), (0,),
                            vary={"tiresias:thresholds": ("600", "3600")}))
    by_policy = {(r.labels["policy"], r.labels["tiresias:thresholds"]): r for r in runs}
    assert by_policy["tiresias", "600"].config.policy_options == (("thresholds", "600"),)
    # fifo has no such option: one config (one key, run once) at both values
    assert by_policy["fifo", "600"].key == by_policy["fifo", "3600"].key


def test_the_key_ignores_the_output_folder_only() -> None:
    run = expand(SweepSpec(("pollux-1",), ("pollux-64",), ("fifo",), (0,)))[0].config
    from dataclasses import replace

    assert run_key(replace(run, out="elsewhere")) == run_key(run)
    assert run_key(replace(run, seed=1)) != run_key(run)


@pytest.mark.parametrize(("spec", "message"), [
    (SweepSpec(("pollux-1",), ("pollux-64",), ("fifo",), (0,), {"seed": 3}), "option 'seed'"),
    (SweepSpec(("pollux-1",), ("pollux-64",), ("fifo",), (0,), {"limt": 3}), "option 'limt'"),
    # The --vary errors named --policy-opt, a flag the user had not typed.
    (SweepSpec(("pollux-1",), ("pollux-64",), ("fifo",), (0,),
               vary={"tiresias:thresholds": ("1",)}),
     "^--vary tiresias:thresholds: policy 'tiresias' is not being run"),
    (SweepSpec(("pollux-1",), ("pollux-64",), ("tiresias",), (0,),
               vary={"tiresias:queues": ("1",)}),
     "^--vary tiresias:queues: policy tiresias has no option 'queues'"),
    (SweepSpec(("pollux-1",), ("pollux-64",), ("fifo",), (0,), vary={"limt": (1, 2)}),
     "^--vary limt: neither an option of `dlsched simulate` \\(by field name, e.g. limit\\) "
     "nor an option of fifo"),
    (SweepSpec((), ("pollux-64",), ("fifo",), (0,)), "at least one of traces"),
], ids=["own-axis", "unknown", "policy-not-run", "unknown-policy-option", "unknown-vary-key",
        "no-traces"])
def test_bad_grids_fail_before_any_run(spec: SweepSpec, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        expand(spec)


@pytest.mark.parametrize(("text", "seeds"), [("0-4", (0, 1, 2, 3, 4)), ("3", (3,)),
                                             ("0-1,7,1", (0, 1, 7))])
def test_parse_seeds(text: str, seeds: tuple[int, ...]) -> None:
    assert parse_seeds(text) == seeds


def test_a_backward_seed_range_says_so() -> None:
    """``--seeds 4-0`` said "give at least one seed"."""
    with pytest.raises(ConfigError, match="^--seeds 4-0: the first seed is larger than the last"):
        parse_seeds("0,4-0")


def test_a_key_varied_twice_is_refused_not_half_dropped() -> None:
    """``--vary limit=2,3 --vary limit=4`` ran limit=4 only, without a word."""
    with pytest.raises(ConfigError, match="^--vary limit: given twice; list all its values in "
                                          "one --vary limit=V1,V2,..."):
        parse_assignments(["limit=2,3", "limit=4"], "--vary", many=True)
    assert parse_assignments(["limit=2", "limit=4"], "--set", many=False) == {"limit": 4}


def test_assignments_are_yaml_scalars_but_policy_options_stay_text() -> None:
    assert parse_assignments(["limit=300", "tiresias:thresholds=600:3600"], "--set",
                             many=False) == {"limit": 300, "tiresias:thresholds": "600:3600"}
    assert parse_assignments(["round_seconds=60,120"], "--vary", many=True) == {
        "round_seconds": (60, 120)}
    with pytest.raises(ConfigError, match="--set: expected key=value"):
        parse_assignments(["limit"], "--set", many=False)
    # An empty value read as YAML null ran round_seconds=None without a word.
    with pytest.raises(ConfigError, match="an empty value \\(write null for none\\)"):
        parse_assignments(["round_seconds=,60"], "--vary", many=True)
    with pytest.raises(ConfigError, match="--set 'limit=': an empty value"):
        parse_assignments(["limit="], "--set", many=False)
    assert parse_assignments(["round_seconds=null,60"], "--vary", many=True) == {
        "round_seconds": (None, 60)}


def test_a_sweep_file_error_names_file_line_and_key(tmp_path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("traces: [pollux-1]\npolicies: [fifo]\nseed: [0, 1]\n")
    result = run_sweep_file(path, tmp_path)
    assert result.exit_code == 2
    assert f"{path}:3:seed: unknown key" in result.output


def test_ray_address_without_ray_is_one_line(monkeypatch, tmp_path) -> None:
    import sys

    from typer.testing import CliRunner

    from dlsched.cli import app

    monkeypatch.setitem(sys.modules, "ray", None)
    result = CliRunner().invoke(app, ["sweep", "--trace", "pollux-1", "--cluster", "pollux-64",
                                      "--policies", "fifo", "--ray-address", "auto", "--out",
                                      str(tmp_path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "error: dlsched sweep --ray-address needs the ray extra (no module named 'ray'): "
        "pip install 'dlsched[ray]'")


@pytest.mark.parametrize(("seeds", "message"), [
    ("[a]", "sweep.yaml:3:seeds[0]: expected a whole number, got 'a'"),
    ("[0, 1.5]", "sweep.yaml:3:seeds[1]: expected a whole number, got 1.5"),
], ids=["text", "fraction"])
def test_a_sweep_file_seed_that_is_not_a_whole_number(tmp_path, seeds: str,
                                                      message: str) -> None:
    """``seeds: [a]`` ended in int()'s ValueError traceback."""
    (tmp_path / "sweep.yaml").write_text(f"traces: [pollux-1]\npolicies: [fifo]\nseeds: {seeds}\n")
    result = run_sweep_file(tmp_path / "sweep.yaml", tmp_path)
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].endswith(message)


def test_a_seed_given_twice_is_one_run_and_one_row(tmp_path) -> None:
    """``seeds: [0, 0]`` ran once but gave two rows, and ci.csv counted the run twice."""
    import dlsched

    table = dlsched.sweep(["pollux-1"], ["pollux-64"], ["fifo"], seeds=[0, 0],
                          options={"limit": 3}, out=tmp_path, workers=1, plots=False)
    assert table["seed"].tolist() == [0]
    with pytest.raises(ConfigError, match="seeds: expected whole numbers, got 'a'"):
        dlsched.sweep(["pollux-1"], ["pollux-64"], ["fifo"], seeds=["a"], workers=1)


def test_a_value_given_twice_is_one_run() -> None:
    """``--policies fifo,fifo --trace pollux-1 --trace pollux-1`` gave four rows of one run,
    and ci.csv an interval over four copies of it."""
    runs = expand(SweepSpec(("pollux-1", "pollux-1"), ("pollux-64", "pollux-64"),
                            ("fifo", "fifo"), (0, 0), vary={"limit": (3, 3, 4)}))
    assert [(r.labels["seed"], r.labels["limit"]) for r in runs] == [(0, "3"), (0, "4")]


def test_a_runs_progress_line_names_only_the_options_that_apply_to_it(tmp_path) -> None:
    """With ``--vary tiresias:thresholds=600,3600`` the fifo run's line read ``fifo 0 600``,
    as if fifo had a threshold; a tiresias run's value had no name."""
    from typer.testing import CliRunner

    from dlsched.cli import app

    result = CliRunner().invoke(app, ["sweep", "--trace", "pollux-1", "--cluster", "pollux-64",
                                      "--policies", "fifo,tiresias", "--set", "limit=20",
                                      "--vary", "tiresias:thresholds=600,3600", "--workers",
                                      "1", "--no-plots", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    lines = [line.split("] ", 1)[1].split(":")[0] for line in result.output.splitlines()
             if line.startswith("[")]
    assert sorted(lines) == ["pollux-1 pollux-64 fifo 0",
                             "pollux-1 pollux-64 tiresias 0 thresholds=3600",
                             "pollux-1 pollux-64 tiresias 0 thresholds=600"]


@pytest.mark.parametrize(("spec", "meant"), [
    (SweepSpec(("pollux-1",), ("pollux-64",), ("fifo",), (0,), {"synthetic_job": 20}),
     "synthetic_jobs"),
    (SweepSpec(("pollux-1",), ("pollux-64",), ("fifo",), (0,), vary={"limt": (1, 2)}), "limit"),
    (SweepSpec(("pollux-1",), ("pollux-64",), ("tiresias",), (0,),
               vary={"tiresias:threshold": ("60",)}), "thresholds"),
    (SweepSpec(("pollux-1",), ("pollux-64",), ("fifo", "tiresias"), (0,),
               vary={"threshold": ("60",)}), "thresholds"),
], ids=["set-field", "vary-field", "vary-policy-option", "vary-plain-option"])
def test_a_mistyped_key_names_the_one_meant(spec: SweepSpec, meant: str) -> None:
    """``--set synthetic_job=20`` said only "not an option a sweep may set"."""
    with pytest.raises(ConfigError, match=f"; did you mean '{meant}'\\?$"):
        expand(spec)


@pytest.mark.parametrize(("seeds", "outcome"), [
    (3, "seeds: expected a list of seeds, got 3 \\(seeds=range\\(3\\) for seeds 0-2, "
        "seeds=\\[3\\] for seed 3 alone\\)"),
    ("0-1", [0, 1]),
], ids=["one-number", "the-cli-text"])
def test_seeds_as_a_number_or_text(tmp_path, seeds: object, outcome: object) -> None:
    """``dlsched.sweep(..., seeds=3)`` raised Python's "'int' object is not iterable"."""
    import dlsched

    def run() -> list[int]:
        return dlsched.sweep(["pollux-1"], ["pollux-64"], ["fifo"], seeds=seeds,
                             options={"limit": 3}, out=tmp_path, workers=1,
                             plots=False)["seed"].tolist()

    if isinstance(outcome, str):
        with pytest.raises(ConfigError, match=outcome):
            run()
    else:
        assert run() == outcome


@pytest.mark.parametrize(("axis", "values"), [
    ({"limit": 3}, [3]), ({"limit": [2, 3]}, [2, 3]), ({"limit": range(2, 4)}, [2, 3]),
], ids=["one-number", "a-list", "a-range"])
def test_a_vary_axis_of_one_value(tmp_path, axis: dict, values: list[int]) -> None:
    """``dlsched.sweep(..., vary={"limit": 3})`` raised Python's "'int' object is not
    iterable"; text was already one value."""
    import dlsched

    table = dlsched.sweep(["pollux-1"], ["pollux-64"], ["fifo"], seeds=[0], vary=axis,
                          out=tmp_path, workers=1, plots=False)
    assert table["limit"].tolist() == values


def test_a_sweep_files_option_typo_is_named_at_its_line(tmp_path) -> None:
    """``options: {synthetic_job: 50}`` was named without its file and line, and ``seed:``
    without the key meant."""
    path = tmp_path / "sweep.yaml"
    path.write_text("traces: [pollux-1]\npolicies: [fifo]\noptions:\n  synthetic_job: 50\n")
    said = run_sweep_file(path, tmp_path).output
    assert " ".join(said.split()).startswith(
        f"error: {path}:4:options.synthetic_job: not an option a sweep may set"), said
    assert "did you mean 'synthetic_jobs'?" in " ".join(said.split())
    path.write_text("traces: [pollux-1]\nseed: [0, 1]\n")
    said = run_sweep_file(path, tmp_path).output
    assert "did you mean 'seeds'?" in " ".join(said.split()), said


@pytest.mark.parametrize(("body", "said"), [
    ("options:\n  limit: abc\n", ":4:options.limit: expected an integer (or null), got 'abc'"),
    ("vary:\n  round_seconds: [60, x]\n",
     ":4:vary.round_seconds[1]: expected a number (or null), got 'x'"),
], ids=["option", "varied"])
def test_a_sweep_files_bad_value_is_named_at_its_line(tmp_path, body: str, said: str) -> None:
    """'sweep option limit: expected an integer' had no file nor line; one run read '1 runs'."""
    path = tmp_path / "sweep.yaml"
    path.write_text("traces: [pollux-1]\npolicies: [fifo]\n" + body)
    result = run_sweep_file(path, tmp_path)
    assert result.exit_code == 2
    assert " ".join(result.output.split()).endswith(f"{path}{said}"), result.output
    path.write_text("traces: [pollux-1]\npolicies: [fifo]\noptions: {limit: 3}\n")
    result = run_sweep_file(path, tmp_path, "--workers", "1")
    assert result.exit_code == 0 and "1 run (1 run now" in result.output, result.output


def test_a_sweep_files_axis_that_is_no_list_is_named(tmp_path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text("traces: [pollux-1]\nclusters: {pollux-64: 1}\n")
    result = run_sweep_file(path, tmp_path)
    assert result.exit_code == 2
    assert " ".join(result.output.split()).endswith(f"{path}:2:clusters: expected a list")


@pytest.mark.parametrize("address", ["auto", "127.0.0.1:{port}"], ids=["auto", "host-port"])
def test_no_ray_at_the_address_is_one_line(monkeypatch, tmp_path, address: str) -> None:
    """No Ray at ``auto`` ended in a 40-line ConnectionError traceback, and nothing listening
    at HOST:PORT in minutes of Ray's own retry warnings (serve --executor ray said one line)."""
    import importlib.machinery
    import socket
    import sys
    import types

    from typer.testing import CliRunner

    from dlsched.cli import app

    def init(address: str, **_: object) -> None:
        raise ConnectionError("Could not find any running Ray instance.")

    fake = types.ModuleType("ray")
    fake.__spec__ = importlib.machinery.ModuleSpec("ray", None)  # found by find_spec
    fake.is_initialized = lambda: False  # type: ignore[attr-defined]
    fake.init = init  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "ray", fake)
    with socket.socket() as free:  # a port nothing listens on once closed
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    address = address.format(port=port)
    result = CliRunner().invoke(app, ["sweep", "--trace", "pollux-1", "--cluster", "pollux-64",
                                      "--policies", "fifo", "--ray-address", address, "--out",
                                      str(tmp_path)])
    assert result.exit_code == 2, result.output
    last = " ".join(result.output.split()).split("error: ")[-1]
    assert last.startswith(f"--ray-address {address}: cannot connect: "), result.output
