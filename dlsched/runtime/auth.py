"""Who is calling the API: one shared token (``--token``), or per-tenant tokens from a YAML file
(``--tokens-file``) that limit each tenant to its own queues.

```yaml
tenants:
  - name: team-a
    token_file: team-a.token      # or token: "...", at least 16 characters
    queues: [team-a, shared]      # the queues it may submit to, see and cancel in
    paths: [/data/team-a]         # directories its jobs may work and checkpoint in (optional)
  - name: ops
    token: "0123456789abcdef-ops"
    admin: true                   # every queue
```

A tenant sees and cancels only the jobs of its queues; another queue's job answers 404, as if it
did not exist. A tenant's jobs may use as working and checkpoint directories only what lies
under its ``paths`` (none: only the per-job directory the service makes, ``confine.py``); an
admin's anything outside the data directory. Workers never get a tenant's token: each job's
workers get a token of their own (an HMAC of the job id under a secret made at start) that
only reports that job's progress.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.errors import InputError, InputLocation
from dlsched.textinput import read_text
from dlsched.yamlinput import YamlSource, parse_yaml

MIN_TOKEN_LENGTH = 16
MAX_NAME = 256
MAX_TOKEN_FILE = 4096
_KEYS = {"name", "token", "token_file", "queues", "admin", "paths"}


@dataclass(frozen=True)
class Principal:
    """A caller: ``queues`` None means every queue (the shared token, an admin tenant)."""

    tenant: str
    queues: frozenset[str] | None = None
    job_id: str | None = None  # set: a job's workers, allowed only that job's progress
    paths: tuple[Path, ...] | None = None  # directories its jobs may use (None: any)

    def may_use(self, queue: str) -> bool:
        return self.job_id is None and (self.queues is None or queue in self.queues)


ANYONE = Principal("anyone")  # no authentication configured


@dataclass(frozen=True)
class Tenant:
    name: str
    token: str = field(repr=False)
    queues: frozenset[str] | None
    paths: tuple[Path, ...] | None = None


@dataclass
class TokenTable:
    tenants: tuple[Tenant, ...]
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    def identify(self, token: str) -> Principal | None:
        for tenant in self.tenants:  # compare with every one: no timing hint which matched
            if secrets.compare_digest(token.encode(), tenant.token.encode()):
                return Principal(tenant.name, tenant.queues, paths=tenant.paths)
        job_id, _, mac = token.partition(".")
        if job_id and mac and secrets.compare_digest(mac, self._mac(job_id)):
            return Principal(f"workers of {job_id}", frozenset(), job_id)
        return None

    def worker_token(self, job_id: str) -> str:
        return f"{job_id}.{self._mac(job_id)}"

    def _mac(self, job_id: str) -> str:
        return hmac.new(self.secret, job_id.encode(), hashlib.sha256).hexdigest()


def principal_of(given: str, token: str | None, table: TokenTable | None) -> Principal | None:
    """Who ``given`` is: the admin (``--token``), a tenant or a job's workers; None if nobody."""
    if token is not None and secrets.compare_digest(given.encode(), token.encode()):
        return Principal("admin")
    return table.identify(given) if table is not None else None


def load_tokens(path: str | Path) -> TokenTable:
    """Parse a tokens file; errors name the file, line and field."""
    source = str(path)
    doc, src = parse_yaml(read_text(path), source)
    if not isinstance(doc, dict) or list(doc) != ["tenants"]:
        other = next((str(k) for k in doc if k != "tenants"), None) if isinstance(doc, dict) \
            else None
        where = InputLocation(source, src.line(other) if other else 1, other)
        raise InputError(where, "expected one key, 'tenants', a list")
    listed = doc["tenants"]
    if not isinstance(listed, list) or not listed:
        raise src.error("tenants", "must be a non-empty list")
    tenants = [_tenant(raw, f"tenants[{i}]", src, Path(path).parent)
               for i, raw in enumerate(listed)]
    _unique(tenants, src)
    return TokenTable(tuple(tenants))


def _tenant(raw: Any, where: str, src: YamlSource, base: Path) -> Tenant:
    def error(key: str, message: str) -> InputError:
        return src.error(f"{where}.{key}", message)

    if not isinstance(raw, dict):
        raise src.error(where, "must be a mapping")
    for key in raw:
        if key not in _KEYS:
            raise error(str(key), f"unknown key (known: {', '.join(sorted(_KEYS))})")
    name = raw.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise error("name", f"a tenant needs a name (a string of 1 to {MAX_NAME} characters)")
    if ("token" in raw) == ("token_file" in raw):
        raise error("token", "give exactly one of token and token_file")
    token = raw.get("token")
    if "token_file" in raw:
        token = _token_file(base / str(raw["token_file"]), error)
    if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
        raise error("token", f"a token needs at least {MIN_TOKEN_LENGTH} characters")
    if raw.get("admin") is True:
        return Tenant(name, token, None, _paths(raw, base, error, True))
    queues = raw.get("queues")
    if not isinstance(queues, list) or not queues or not all(
            isinstance(q, str) and q for q in queues):
        raise error("queues", "a list of queue names (or admin: true)")
    return Tenant(name, token, frozenset(queues), _paths(raw, base, error, False))


def _paths(raw: dict[str, Any], base: Path, error: Callable[[str, str], InputError],
           admin: bool) -> tuple[Path, ...] | None:
    """A tenant's allowed directories, absolute (relative ones from the tokens file's folder).
    An admin without ``paths`` may use any directory; a tenant without, none."""
    paths = raw.get("paths")
    if paths is None:
        return None if admin else ()
    if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
        raise error("paths", "a list of directories")
    return tuple((base / p).resolve() for p in paths)


def _token_file(path: Path, error: Callable[[str, str], InputError]) -> str:
    try:
        return read_text(path, max_bytes=MAX_TOKEN_FILE).strip()
    except InputError as exc:
        raise error("token_file", exc.message if exc.location.path == str(path)
                    else str(exc)) from None


def _unique(tenants: Iterable[Tenant], src: YamlSource) -> None:
    names: set[str] = set()
    tokens: set[str] = set()
    for i, tenant in enumerate(tenants):
        if tenant.name in names:
            raise src.error(f"tenants[{i}].name", f"tenant {tenant.name!r} appears twice")
        if tenant.token in tokens:
            raise src.error(f"tenants[{i}].token", "two tenants share a token")
        names.add(tenant.name)
        tokens.add(tenant.token)
