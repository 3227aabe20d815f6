"""What the runtime's verbs share: the error console, the client options (``--url``,
``--token``, ``--json``, ``--wait``), connecting, and how a failure or JSON is printed.

Nothing here imports the runtime's optional dependencies until a command connects.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.extras import CLIENT, MissingExtra, require

console = Console(stderr=True, soft_wrap=True, emoji=False)
DEFAULT_URL = "http://127.0.0.1:8765"

UrlOpt = Annotated[str, typer.Option("--url", help="The service's URL.")]
TokenOpt = Annotated[str | None, typer.Option("--token", help="API token, if the service has "
                                                             "one.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the API's own objects) "
                                                      "instead of a table.")]
WaitOpt = Annotated[float, typer.Option(
    "--wait", help="Seconds to keep trying while the service cannot be reached yet (one "
                   "started with `dlsched serve &` a moment ago); 0: fail at once.")]


def connect(verb: str, url: str, token: str | None, wait: float = 0.0) -> Any:
    """A client of the service at ``url`` for ``dlsched VERB`` (the ``client`` extra)."""
    require("runtime", f"dlsched {verb}", CLIENT)
    from dlsched.runtime.client import Client

    return Client(url, token, connect_wait=wait)


def fail(exc: Exception) -> NoReturn:
    """The service's (or our) message on one line, exit 1; a missing extra exits 2. A refused
    token says which flag carries one: the API's words ("send 'Authorization: Bearer T'")
    name a header the command line never shows."""
    message = str(exc)
    if getattr(exc, "status", None) == 401:
        message += ": give the service's token with --token"
    console.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(2 if isinstance(exc, MissingExtra) else 1)


def print_json(data: Any) -> None:
    """``--json``'s output: the API's objects, indented, keys sorted."""
    print(json.dumps(data, indent=2, sort_keys=True))
