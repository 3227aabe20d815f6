"""Help text as paragraphs: a docstring's hard line breaks are not shown as line breaks.

Typer's rich help keeps a single newline of a command's help where it lists the commands
(``dlsched --help``) and in every paragraph after the first, so a docstring wrapped at 100
columns showed broken mid-sentence ("write one folder per policy and" / "--out/report.html
comparing them."). ``HelpGroup``, the root group's class, joins each paragraph's lines once
the whole command tree is built; a paragraph starting with click's ``\\b`` stays as typed.
"""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperGroup


def reflow(text: str | None) -> str | None:
    """Each paragraph (blank-line separated) on one line; what follows ``\\f`` (click's "not
    shown") is kept as it is."""
    if not text:
        return text
    shown, cut, hidden = text.partition("\f")
    paragraphs = inspect.cleandoc(shown).split("\n\n")
    joined = [p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs]
    return "\n\n".join(joined) + cut + hidden


def reflow_tree(command: Any) -> None:
    """``reflow`` the help of ``command``, its parameters and every subcommand, in place.
    (Typed ``Any``: typer >= 0.20 builds its commands with its own copy of click, and the
    ``click`` package need not be installed.)"""
    command.help = reflow(command.help)
    for param in command.params:
        if isinstance(getattr(param, "help", None), str):
            param.help = reflow(param.help)
    for sub in getattr(command, "commands", {}).values():
        reflow_tree(sub)


class HelpGroup(TyperGroup):
    """The ``dlsched`` group: built last (after its subcommands and groups), it reflows the
    help of the whole tree."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        reflow_tree(self)
