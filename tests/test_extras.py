"""A missing optional extra ends in one line naming what to install, exit code 2, no traceback
(issue 11 item 8, issue 18 item 6). A module is made missing by a None entry in sys.modules,
which is what ``import`` and ``find_spec`` then report."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import _App, app
from dlsched.extras import MissingExtra, extra_of

runner = CliRunner()
RUNTIME = "pip install 'dlsched[runtime]'"


def _hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


@pytest.mark.parametrize(("missing", "args"), [
    ("uvicorn", ["serve", "--gpus", "1", "--port", "0"]),
    ("fastapi", ["serve", "--gpus", "1", "--port", "0"]),
    ("jinja2", ["serve", "--gpus", "1", "--port", "0"]),  # the dashboard's templates
    ("httpx", ["submit", "--gpus", "1", "--", "true"]),
    ("httpx", ["jobs"]),
    ("httpx", ["status"]),
    ("httpx", ["cancel", "job-000001"]),
    ("httpx", ["logs", "job-000001"]),
], ids=["serve-uvicorn", "serve-fastapi", "serve-jinja2", "submit", "jobs", "status", "cancel",
        "logs"])
def test_runtime_verbs_without_the_runtime_extra(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path, missing: str,
                                                 args: list[str]) -> None:
    _hide(monkeypatch, missing)
    if args[0] == "serve":
        args = [*args, "--data-dir", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    what = f"dlsched {args[0]}"
    assert _lines(result.output) == [f"error: {what} needs the runtime extra (no module named "
                                     f"'{missing}'): {RUNTIME}"]
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_serve_with_ray_without_the_ray_extra(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    _hide(monkeypatch, "ray")
    result = runner.invoke(app, ["serve", "--executor", "ray", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "pip install 'dlsched[ray]'" in result.output


def test_parquet_output_without_pyarrow_names_the_extra_and_the_flag(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _hide(monkeypatch, "pyarrow")
    result = runner.invoke(app, ["simulate", "--trace", "pollux-1", "--cluster", "pollux-64",
                                 "--jobs-format", "parquet", "--out", str(tmp_path)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert "pip install 'dlsched[parquet]' (or --jobs-format csv)" in text  # not eaten as markup
    assert not (tmp_path / "summary.json").exists()


def test_the_app_turns_any_missing_extra_module_into_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The last line of defence, for an import no command checked first."""
    _hide(monkeypatch, "sqlalchemy")
    probe = _App()

    @probe.command()
    def needs_sqlalchemy() -> None:
        importlib.import_module("sqlalchemy")

    @probe.command()
    def other() -> None:  # a second command, so that Typer keeps subcommands
        pass

    with pytest.raises(SystemExit) as exit_info:
        probe(["needs-sqlalchemy"])
    assert exit_info.value.code == 2
    assert _lines(capsys.readouterr().err) == [
        f"error: this command needs the runtime extra (no module named 'sqlalchemy'): {RUNTIME}"]


def test_the_torch_helpers_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide(monkeypatch, "torch")
    monkeypatch.delitem(sys.modules, "dlsched.job.torch", raising=False)
    with pytest.raises(MissingExtra, match=r"pip install 'dlsched\[torch\]'"):
        importlib.import_module("dlsched.job.torch")


@pytest.mark.parametrize(("module", "extra"), [
    ("uvicorn.server", "runtime"), ("pyarrow", "parquet"), ("torch.nn", "torch"),
    ("ray", "ray"), ("numpy", None), (None, None)])
def test_extra_of(module: str | None, extra: str | None) -> None:
    assert extra_of(module) == extra


# A fresh interpreter where the given top-level modules cannot be imported, as on an install
# without their extra (a finder first on sys.meta_path refuses them), running ``dlsched``.
BLOCKED_RUN = """
import sys

class Refuse:
    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Refuse(set(sys.argv[1].split(","))))
sys.argv = ["dlsched", *sys.argv[2:]]
from dlsched.cli import app
app()
"""
# Not pydantic: typer (a base dependency) requires it, so every install has it.
RUNTIME_MODULES = "fastapi,uvicorn,sqlalchemy,httpx,prometheus_client,jinja2"


@pytest.mark.parametrize(("blocked", "args", "line"), [
    (RUNTIME_MODULES, ["serve", "--gpus", "1", "--port", "0"],
     "error: dlsched serve needs the runtime extra (no module named 'fastapi'): " + RUNTIME),
    ("ray", ["serve", "--executor", "ray", "--ray-address", "auto"],
     "error: dlsched serve --executor ray needs the ray extra (no module named 'ray'): "
     "pip install 'dlsched[ray]'"),
], ids=["serve-no-runtime", "serve-ray-no-ray"])
def test_a_fresh_dlsched_without_an_extra_says_what_to_install(
        tmp_path: Path, blocked: str, args: list[str], line: str) -> None:
    if args[0] == "serve":
        args = [*args, "--data-dir", str(tmp_path / "data")]
    done = subprocess.run([sys.executable, "-c", BLOCKED_RUN, blocked, *args],
                          capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parents[1])
    assert done.returncode == 2, done.stderr
    assert _lines(done.stderr) == [line]
    assert done.stdout == "" and "Traceback" not in done.stderr
