"""A command group whose help lists its commands ("A real LLM service on CPU: serve, profile,
loadgen, validate.") lists every one of them: `dlsched --help` and `dlsched inference --help`
left out `resimulate`, which the group had."""

from __future__ import annotations

import typer.main

from dlsched.cli import app


def _listed(help_text: str, names: set[str]) -> set[str] | None:
    """The command names of the help's last ``: a, b, c.`` list, or None if it has none."""
    tail = help_text.rsplit(":", 1)[-1].strip().rstrip(".")
    words = {word.strip() for word in tail.split(",")}
    return words if len(words) > 1 and words <= names else None


def test_a_group_that_lists_its_commands_lists_them_all() -> None:
    root = typer.main.get_command(app)
    groups = {name: command for name, command in root.commands.items()  # type: ignore[attr-defined]
              if getattr(command, "commands", None)}
    checked = 0
    for name, group in groups.items():
        commands = set(group.commands)
        listed = _listed(group.help or "", commands)
        if listed is not None:
            checked += 1
            assert listed == commands, f"dlsched {name}: help lists {sorted(listed)}"
    assert checked, "no group lists its commands: the pattern is wrong"
