"""``--help`` reads as paragraphs: a docstring's hard line breaks are not shown (the command
list showed "write one folder per policy and" / "--out/report.html comparing them.")."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from dlsched.cli import app
from dlsched.cli_help import reflow

WIDE = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}  # nothing wraps for want of room


def _tree(command: Any, path: str = "dlsched") -> Iterator[tuple[str, Any]]:
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _tree(sub, f"{path} {name}")


@pytest.mark.parametrize(("text", "expected"), [
    ("One line\nwrapped.", "One line wrapped."),
    ("First\nparagraph.\n\n    Second\n    one.", "First paragraph.\n\nSecond one."),
    ("\bkept\nas typed\n\njoined\nhere", "\bkept\nas typed\n\njoined here"),
    ("Shown\ntext.\f\nhidden\nlines", "Shown text.\f\nhidden\nlines"),
    (None, None),
], ids=["one-paragraph", "two-paragraphs", "backspace-paragraph", "form-feed", "none"])
def test_reflow(text: str | None, expected: str | None) -> None:
    assert reflow(text) == expected


def test_every_command_and_option_help_has_no_line_break_inside_a_paragraph() -> None:
    root = typer.main.get_command(app)
    for path, command in _tree(root):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        for text in texts:
            for paragraph in text.split("\n\n"):
                assert "\n" not in paragraph, f"{path}: {paragraph!r}"


@pytest.mark.parametrize(("args", "line_start", "line_end"), [
    ([], "compare", "write one folder per policy and --out/report.html comparing them."),
    ([], "serve", "SIGINT or SIGTERM stops it: running jobs get SIGTERM and --grace-seconds, "
                  "and are requeued to resume at the next start."),
    (["history"], "cluster", "as a cluster YAML for `dlsched simulate --cluster FILE`."),
    (["inference"], "resimulate", "compare with its measurements as validate does."),
], ids=["compare", "serve", "history-cluster", "inference-resimulate"])
def test_the_command_list_shows_each_summary_on_one_line(args: list[str], line_start: str,
                                                         line_end: str) -> None:
    result = CliRunner().invoke(app, [*args, "--help"], env=WIDE)
    assert result.exit_code == 0, result.output
    lines = [line.strip("│ ") for line in result.output.splitlines()]
    line = next(line for line in lines if line.startswith(line_start + " "))
    assert line.endswith(line_end), line


def test_the_help_needs_no_click_package() -> None:
    """typer bundles its own click: a fresh install has no ``click`` package, and importing it
    ended every dlsched command in a ModuleNotFoundError."""
    code = ("import sys; sys.modules['click'] = None\n"
            "from dlsched.cli import app\n"
            "app(['--help'])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=Path(__file__).parents[1], timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout


def test_docs_cli_md_names_every_command() -> None:
    """docs/cli.md, "The dlsched command", listed 11 of its 20 commands (no serve, plan,
    reproduce, mig, inference...)."""
    table = (Path(__file__).parents[1] / "docs" / "cli.md").read_text().split("\n## ")[0]
    root = typer.main.get_command(app)
    for path, _ in _tree(root):
        words = path.split()[1:]
        if len(words) == 1:
            assert f"`dlsched {words[0]}" in table, path
        elif len(words) == 2:  # a group's command: `dlsched GROUP NAME` or `NAME` in its row
            row = next(line for line in table.splitlines() if f"`dlsched {words[0]} " in line)
            assert f"`dlsched {words[0]} {words[1]}" in row or f"`{words[1]}`" in row, path


def test_no_option_shows_a_python_type_as_its_metavar() -> None:
    """Repeatable options read ``<list[str]>`` (sweep --trace, serve --policy-opt, reproduce
    --opt, policies --policy-file, history export --status)."""
    root = typer.main.get_command(app)
    runner = CliRunner()
    for path, command in _tree(root):
        if getattr(command, "commands", None):
            continue
        result = runner.invoke(app, [*path.split()[1:], "--help"], env=WIDE)
        options = [line for line in result.output.splitlines() if "│ --" in line]
        assert not [line for line in options if "list[" in line], path


def test_python_dash_m_dlsched_runs_the_command() -> None:
    """``python -m dlsched`` (the way to run a checkout without installing its console script)
    ended in "No module named dlsched.__main__"; its usage line names ``dlsched``."""
    result = subprocess.run([sys.executable, "-m", "dlsched", "--help"], capture_output=True,
                            text=True, cwd=Path(__file__).parents[1], timeout=120)
    assert result.returncode == 0, result.stderr
    assert "Usage: dlsched " in result.stdout


def test_no_flag_shows_a_type_as_if_it_took_a_value() -> None:
    """Typer 0.29 showed every flag with ``<bool>`` (``--help <bool>``, ``--skip-invalid
    <bool>``, ``--install-completion <bool>``), as if it wanted ``--skip-invalid true``."""
    root = typer.main.get_command(app)
    for path, _ in _tree(root):
        result = CliRunner().invoke(app, [*path.split()[1:], "--help"], env=WIDE)
        assert result.exit_code == 0, result.output
        rows = [line for line in result.output.splitlines()
                if line.lstrip("│ *").startswith("--")]
        assert any("--help" in row for row in rows), path
        assert not [row for row in rows if "<bool>" in row], path


def test_dash_dash_version_prints_the_version() -> None:
    """``dlsched --version`` said "No such option: --version"; ``dlsched version`` stays."""
    from dlsched import __version__

    for args in (["--version"], ["version"]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0 and result.output == f"{__version__}\n", args
