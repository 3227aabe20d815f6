"""What the runtime's verbs share: the error console, the client options (``--url``,
``--token``, ``--token-file``, ``--json``, ``--wait``), connecting, and how a failure or JSON
is printed.

Nothing here imports the runtime's optional dependencies until a command connects.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from dlsched.errors import DlschedError
from dlsched.extras import CLIENT, MissingExtra, require

console = Console(stderr=True, soft_wrap=True, emoji=False)
DEFAULT_URL = "http://127.0.0.1:8765"

# The client verbs' URL and token may come from the environment under the names the workers'
# contract gives them (docs/runtime.md): a job's own commands reach its service unasked.
URL_ENV, TOKEN_ENV = "DLSCHED_SERVICE_URL", "DLSCHED_TOKEN"
UrlOpt = Annotated[str, typer.Option("--url", envvar=URL_ENV, help="The service's URL.")]
TokenOpt = Annotated[str | None, typer.Option("--token", help="API token, if the service has "
                                                             "one.")]
ClientTokenOpt = Annotated[str | None, typer.Option(
    "--token", envvar=TOKEN_ENV, help="API token, if the service has one (visible in `ps`: "
                                      "prefer --token-file or the environment).")]
TokenFileOpt = Annotated[Path | None, typer.Option(
    "--token-file", help="Read the API token from this file (over --token).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the API's own objects) "
                                                      "instead of a table.")]
WaitOpt = Annotated[float, typer.Option(
    "--wait", help="Seconds to keep trying while the service cannot be reached yet (one "
                   "started with `dlsched serve &` a moment ago); 0: fail at once.")]


def connect(verb: str, url: str, token: str | None, wait: float = 0.0,
            token_file: Path | None = None) -> Any:
    """A client of the service at ``url`` for ``dlsched VERB`` (the ``client`` extra), with
    ``token_file``'s token if given, else ``token``."""
    if token_file is not None:
        token = read_token(token_file)
    require("runtime", f"dlsched {verb}", CLIENT)
    from dlsched.runtime.client import Client

    return Client(url, token, connect_wait=wait)


def read_token(path: Path) -> str:
    """The token in ``path`` (``--token-file``), stripped; an empty or unreadable file is
    one line naming it."""
    try:
        text = path.read_text().strip()
    except OSError as exc:
        raise DlschedError(f"token file {path}: cannot read: {exc.strerror or exc}") from None
    if not text:
        raise DlschedError(f"token file {path} is empty")
    return text


def fail(exc: Exception) -> NoReturn:
    """The service's (or our) message on one line, exit 1; a missing extra exits 2. A refused
    token says which flag carries one: the API's words ("send 'Authorization: Bearer T'")
    name a header the command line never shows."""
    message = str(exc)
    if getattr(exc, "status", None) == 401:
        message += (f": give the service's token with --token-file F, ${TOKEN_ENV} or "
                    "--token T")
    console.print(f"[red]error:[/] {escape(message)}")
    raise typer.Exit(2 if isinstance(exc, MissingExtra) else 1)


def print_json(data: Any) -> None:
    """``--json``'s output: the API's objects, indented, keys sorted."""
    print(json.dumps(data, indent=2, sort_keys=True))
