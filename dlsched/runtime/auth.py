"""Who is calling the API: one shared token (``--token``), or per-tenant tokens from a YAML file
(``--tokens-file``) that limit each tenant to its own queues.

```yaml
tenants:
  - name: team-a
    token_file: team-a.token      # or token: "...", at least 16 characters
    queues: [team-a, shared]      # the queues it may submit to, see and cancel in
  - name: ops
    token: "0123456789abcdef-ops"
    admin: true                   # every queue
```

A tenant sees and cancels only the jobs of its queues; another queue's job answers 404, as if it
did not exist. Workers never get a tenant's token: each job's workers get a token of their own
(an HMAC of the job id under a secret made at start) that only reports that job's progress.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dlsched.errors import InputError, InputLocation

MIN_TOKEN_LENGTH = 16
_KEYS = {"name", "token", "token_file", "queues", "admin"}


@dataclass(frozen=True)
class Principal:
    """A caller: ``queues`` None means every queue (the shared token, an admin tenant)."""

    tenant: str
    queues: frozenset[str] | None = None
    job_id: str | None = None  # set: a job's workers, allowed only that job's progress

    def may_use(self, queue: str) -> bool:
        return self.job_id is None and (self.queues is None or queue in self.queues)


ANYONE = Principal("anyone")  # no authentication configured


@dataclass(frozen=True)
class Tenant:
    name: str
    token: str = field(repr=False)
    queues: frozenset[str] | None


@dataclass
class TokenTable:
    tenants: tuple[Tenant, ...]
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32), repr=False)

    def identify(self, token: str) -> Principal | None:
        for tenant in self.tenants:  # compare with every one: no timing hint which matched
            if secrets.compare_digest(token.encode(), tenant.token.encode()):
                return Principal(tenant.name, tenant.queues)
        job_id, _, mac = token.partition(".")
        if job_id and mac and secrets.compare_digest(mac, self._mac(job_id)):
            return Principal(f"workers of {job_id}", frozenset(), job_id)
        return None

    def worker_token(self, job_id: str) -> str:
        return f"{job_id}.{self._mac(job_id)}"

    def _mac(self, job_id: str) -> str:
        return hmac.new(self.secret, job_id.encode(), hashlib.sha256).hexdigest()


def load_tokens(path: str | Path) -> TokenTable:
    """Parse a tokens file; errors name the file, line and field."""
    text = Path(path).read_text()
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    source = str(path)
    if not isinstance(root, yaml.MappingNode) or [k.value for k, _ in root.value] != ["tenants"]:
        raise InputError(InputLocation(source, 1), "expected one key, 'tenants', a list")
    listed = root.value[0][1]
    if not isinstance(listed, yaml.SequenceNode) or not listed.value:
        raise InputError(InputLocation(source, listed.start_mark.line + 1, "tenants"),
                         "must be a non-empty list")
    tenants = [_tenant(node, f"tenants[{i}]", source, Path(path).parent)
               for i, node in enumerate(listed.value)]
    _unique(tenants, listed.value, source)
    return TokenTable(tuple(tenants))


def _tenant(node: yaml.Node, where: str, source: str, base: Path) -> Tenant:
    def error(key: str, message: str, at: yaml.Node = node) -> InputError:
        return InputError(InputLocation(source, at.start_mark.line + 1, f"{where}.{key}"),
                          message)

    if not isinstance(node, yaml.MappingNode):
        raise InputError(InputLocation(source, node.start_mark.line + 1, where),
                         "must be a mapping")
    values: dict[str, Any] = {}
    for key_node, value_node in node.value:
        if key_node.value not in _KEYS:
            raise error(key_node.value, f"unknown key (known: {', '.join(sorted(_KEYS))})",
                        key_node)
        values[key_node.value] = yaml.safe_load(yaml.serialize(value_node))
    if not isinstance(values.get("name"), str) or not values["name"]:
        raise error("name", "a tenant needs a name")
    if ("token" in values) == ("token_file" in values):
        raise error("token", "give exactly one of token and token_file")
    token = values.get("token")
    if "token_file" in values:
        token = (base / str(values["token_file"])).read_text().strip()
    if not isinstance(token, str) or len(token) < MIN_TOKEN_LENGTH:
        raise error("token", f"a token needs at least {MIN_TOKEN_LENGTH} characters")
    if values.get("admin") is True:
        return Tenant(values["name"], token, None)
    queues = values.get("queues")
    if not isinstance(queues, list) or not queues or not all(
            isinstance(q, str) and q for q in queues):
        raise error("queues", "a list of queue names (or admin: true)")
    return Tenant(values["name"], token, frozenset(queues))


def _unique(tenants: Iterable[Tenant], nodes: list[yaml.Node], source: str) -> None:
    names: set[str] = set()
    tokens: set[str] = set()
    for i, (tenant, node) in enumerate(zip(tenants, nodes, strict=True)):
        line = node.start_mark.line + 1
        if tenant.name in names:
            raise InputError(InputLocation(source, line, f"tenants[{i}].name"),
                             f"tenant {tenant.name!r} appears twice")
        if tenant.token in tokens:
            raise InputError(InputLocation(source, line, f"tenants[{i}].token"),
                             "two tenants share a token")
        names.add(tenant.name)
        tokens.add(tenant.token)
