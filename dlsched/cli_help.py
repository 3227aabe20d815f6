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
    _hide_flag_types(command)
    for sub in getattr(command, "commands", {}).values():
        reflow_tree(sub)


def _hide_flag_type(param: Any) -> None:
    """A flag takes no value: typer >= 0.29 showed ``--help <bool>``, as if it wanted one
    (``--skip-invalid true``); an empty metavar shows nothing there."""
    if getattr(param, "is_flag", False) and param.metavar is None:
        param.metavar = ""


def _hide_flag_types(command: Any) -> None:
    """Every flag of ``command``, including those made only when a help is shown (``--help``)
    or added after the tree is built (``--install-completion``): its ``get_params`` is
    wrapped to empty their metavars."""
    get_params = command.get_params

    def params_without_flag_types(ctx: Any) -> Any:
        params = get_params(ctx)
        for param in params:
            _hide_flag_type(param)
        return params

    command.get_params = params_without_flag_types


# Commands users look for under another name, and where that work is done: a what-if replay
# of a cluster's own history is two commands, and `dlsched whatif` said only "No such command".
WHAT_IF = ("a what-if replay of a cluster's own history is `dlsched history export --out "
           "FILE` (a dlsched service's jobs; or a Slurm sacct or kubectl export), then "
           "`dlsched compare --trace FILE --policies ...` (docs/what-if.md)")
COMMAND_HINTS = {"whatif": WHAT_IF, "what-if": WHAT_IF, "what_if": WHAT_IF, "replay": WHAT_IF}


class HelpGroup(TyperGroup):
    """The ``dlsched`` group: built last (after its subcommands and groups), it reflows the
    help of the whole tree, and a command looked for under another name
    (``COMMAND_HINTS``) says where that work is done."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        reflow_tree(self)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        name = args[0] if args else None
        if name in COMMAND_HINTS and self.get_command(ctx, name) is None:
            ctx.fail(f"No such command {name!r}: {COMMAND_HINTS[name]}.")
        return super().resolve_command(ctx, args)
