"""Who can reach the service, said at start: a service without tokens runs any command anyone
who reaches it sends, as the user who started it. It refuses to listen off loopback without a
token unless ``--insecure`` is given, and warns loudly otherwise (``docs/runtime.md``)."""

from __future__ import annotations

import ipaddress
import stat
import sys
from pathlib import Path

from dlsched.errors import ConfigError


def is_loopback(host: str) -> bool:
    if host in ("localhost", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name: it may resolve to anything


def exposure_warnings(host: str, port: int, has_token: bool, tokens_file: Path | None,
                      insecure: bool) -> list[str]:
    """What to print at start (loudly); ``ConfigError`` for a service that would let anyone
    on the network run commands."""
    where = f"{host}:{port}"
    if not has_token and not is_loopback(host):
        if not insecure:
            raise ConfigError(f"--host {host} listens beyond this machine, and no token is "
                              "configured: anyone who reaches it could run any command as "
                              "this user. Give --token-file or --tokens-file, or --insecure "
                              "to accept that")
        return [f"WARNING: listening on {where} with NO token (--insecure): anyone who can "
                "reach this port can run any command as this user"]
    warnings = []
    if not has_token:
        warnings.append(f"WARNING: no API token configured: any local user or process that can "
                        f"reach {where} can run any command as this user (give --token-file or "
                        "--tokens-file)")
    if tokens_file is not None:
        warnings += _tokens_file_warnings(tokens_file)
    if tokens_file is not None:
        warnings.append("note: jobs run as this service's user, so a job can read what that "
                        "user can (the database, the tokens file, other jobs' logs and "
                        "checkpoints); tenants are isolated in the API, not on the machine "
                        "(docs/runtime.md, 'Tenants on one machine')")
    return warnings


def _tokens_file_warnings(path: Path) -> list[str]:
    try:
        mode = path.stat().st_mode
    except OSError:
        return []
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        return [f"WARNING: tokens file {path} is readable by other users (mode "
                f"{stat.S_IMODE(mode):o}): chmod 600 {path}"]
    return []


def print_warnings(warnings: list[str]) -> None:
    for warning in warnings:
        print(warning, file=sys.stderr, flush=True)
