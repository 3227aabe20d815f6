"""A Slurm cluster's nodes from ``sinfo`` (or ``scontrol``) output (``--cluster FILE``, told
from its content; docs/clusters.md, docs/what-if.md), so that a replay of its ``sacct``
history runs on its own nodes. Write the file with one of::

    sinfo -N -o "%N %c %m %G %P" > cluster.sinfo      # one line per node and partition
    sinfo --json > cluster.json                       # Slurm 23.02 and later
    scontrol show nodes --json > cluster.json         # any Slurm with JSON output

Text: a header line, then fields separated by spaces or ``|`` (``-o "%N|%c|%m|%G|%P"``).
Columns by their header: ``NODELIST`` or ``HOSTNAMES`` (a host list: ``gpu[01-04]``, so
``sinfo`` without ``-N`` reads too where its lines' nodes are alike), ``GRES``, and optional
``CPUS``, ``MEMORY`` (MB, read as MiB) and ``PARTITION``; others are ignored. JSON:
``sinfo --json``'s ``sinfo`` entries (``nodes.nodes``, ``cpus``, ``memory`` and their
``minimum``/``maximum``, ``gres.total``, ``partition.name``) or the ``nodes`` of ``scontrol
show nodes --json`` (and of older ``sinfo --json``: ``name``, ``cpus``, ``real_memory``,
``gres``, ``partitions``).

A node's GPUs and type come from its GRES (``gpu:a100:8``: 8 A100; ``gpu:8``: 8 of type
``generic``, the GPUs the history ran on; ``nvidia_a100-sxm4-80gb`` names ``A100-80G``:
``node_list.known_type``; GPUs of several types, ``gpu:a100:4,gpu:v100:2``: one node per type,
``NODE:TYPE``, sharing its CPUs and memory by GPU count, with a ``ClusterWarning``); its
partition (without sinfo's ``*`` for the default) becomes
its pool, so a tenant file's flavors can select partitions (a node in several partitions
takes the first listed, as slurm.conf orders them). No topology: one rack, no NVLink. A
node listed again (once per partition) must list the same resources. Errors name the file,
the line and the field.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dlsched.cluster.cluster import Cluster, Node
from dlsched.cluster.hostlist import expand_hostlist, gpu_kinds_of_gres
from dlsched.cluster.loader import MAX_NODES, name_check
from dlsched.cluster.node_list import known_type
from dlsched.cluster.warnings import SERVICE_DEFAULT
from dlsched.errors import ClusterWarning, InputError, InputLocation
from dlsched.textinput import MAX_YAML_BYTES, TextLines, read_text

NAME_COLUMNS = ("NODELIST", "HOSTNAMES")
COMMAND = 'sinfo -N -o "%N %c %m %G %P"'
MAX_JSON_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class _Entry:
    """One line's (or JSON entry's) nodes and what each has; ``where`` names it in errors
    (a JSON entry by its key path, its line looked up only for an error: ``_located``)."""

    names: tuple[str, ...]
    gpus: tuple[tuple[str, int], ...]  # (GRES type, count) per type: ``gpu_kinds_of_gres``
    cpus: float
    memory_mib: float
    partition: str
    where: InputLocation
    gres_at: InputLocation  # its GRES field, for the warning about GPUs of several types


def looks_like_sinfo(path: Path) -> bool:
    """Whether ``path`` is sinfo text (its header names ``NODELIST`` or ``HOSTNAMES``) or
    Slurm JSON (``sinfo`` or ``nodes`` with Slurm's ``meta``/``errors``)."""
    try:
        with path.open("rb") as f:
            head = f.read(4096).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    if head.startswith("{"):
        return bool(re.search(r'"(sinfo|meta|errors)"\s*:', head))
    first = head.splitlines()[0] if head else ""
    return any(name in NAME_COLUMNS for name in re.split(r"[\s|]+", first.upper()))


def load_sinfo(path: Path) -> Cluster:
    """The cluster of a ``sinfo``/``scontrol`` file (module docstring), named after it."""
    with path.open("rb") as f:
        is_json = f.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
    entries = _json_entries(path) if is_json else _text_entries(path)
    split: list[tuple[str, _Entry]] = []
    cluster = Cluster(path.stem, _nodes(path, entries, split))
    if split:
        warnings.warn(ClusterWarning(_split_note(split)), stacklevel=2)
    return cluster


def _nodes(path: Path, entries: Iterator[_Entry], split: list[tuple[str, _Entry]]
           ) -> tuple[Node, ...]:
    """The nodes, each once; a node with GPUs of several types as one node per type (its
    name and the entry added to ``split``, for the warning)."""
    nodes: dict[str, Node] = {}
    first_seen: dict[str, InputLocation] = {}
    hosts: dict[str, _Entry] = {}  # each host's first entry (its GPUs per type)
    for entry in entries:
        for host in entry.names:
            parts = _node_parts(host, entry)
            first = hosts.setdefault(host, entry)
            if first.gpus != entry.gpus:
                raise InputError(_located(entry.where), f"node {host!r} is listed with other "
                                 f"resources at {_located(first.where)}")
            if len(parts) > 1 and parts[0].name not in nodes:
                split.append((host, entry))
            for node in parts:
                _add(nodes, first_seen, node, entry)
    if not any(node.num_gpus for node in nodes.values()):
        raise InputError(InputLocation(str(path)), "no node with GPUs (no 'gpu' GRES): "
                         f"write the file with {COMMAND}")
    return tuple(nodes.values())


def _add(nodes: dict[str, Node], first_seen: dict[str, InputLocation], node: Node,
         entry: _Entry) -> None:
    """``node`` once: listed again (once per partition) it must have the same resources."""
    _check_names(node, entry)
    name, known = node.name, nodes.get(node.name)
    if known is None:
        nodes[name], first_seen[name] = node, entry.where
        if len(nodes) > MAX_NODES:
            raise InputError(_located(entry.where), f"more than {MAX_NODES:,} nodes")
    elif (known.num_gpus, known.gpu_type, known.cpus, known.memory_gb) != (
            node.num_gpus, node.gpu_type, node.cpus, node.memory_gb):
        raise InputError(_located(entry.where), f"node {name!r} is listed with other "
                         f"resources at {_located(first_seen[name])}")


def _check_names(node: Node, entry: _Entry) -> None:
    """A node's and its partition's names as a cluster YAML takes them (``name_check``)."""
    for what, name in (("node name", node.name), ("partition", node.pool)):
        try:
            if name is not None:
                name_check(name)
        except ValueError as exc:
            raise InputError(_located(entry.where), f"{what} {exc}") from None


def _node_parts(name: str, entry: _Entry) -> list[Node]:
    """The node ``name`` of ``entry``: one node; with GPUs of several types (``gpu:a100:4,
    gpu:v100:2``) one node per type, ``NAME:TYPE`` (a dlsched node has one GPU type), its CPUs
    and memory shared out in proportion to their GPUs (the parts hold the whole node's)."""
    pool = entry.partition or None
    if len(entry.gpus) < 2:
        count = entry.gpus[0][1] if entry.gpus else 0
        kind = _type_of(entry.gpus[0][0]) if entry.gpus else ""
        return [Node(name, kind, count, entry.cpus, entry.memory_mib / 1024, pool=pool)]
    total = sum(count for _, count in entry.gpus)
    return [Node(f"{name}:{gres or SERVICE_DEFAULT}", _type_of(gres), count,
                 entry.cpus * count / total, entry.memory_mib / 1024 * count / total, pool=pool)
            for gres, count in entry.gpus]


def _type_of(gres: str) -> str:
    """A GRES type's dlsched GPU type; none named: the GPUs the history ran on
    (``SERVICE_DEFAULT``)."""
    return known_type(gres) if gres else SERVICE_DEFAULT


def _split_note(split: list[tuple[str, _Entry]]) -> str:
    host, entry = split[0]
    kinds = ", ".join(f"{count} {gres or 'untyped'}" for gres, count in entry.gpus)
    more = f" and {len(split) - 1} more such node{'s' if len(split) > 2 else ''}" \
        if len(split) > 1 else ""
    return (f"{_located(entry.gres_at)}: node {host!r} has GPUs of {len(entry.gpus)} types "
            f"({kinds}){more}: a dlsched node has one GPU type, so each is read as one node "
            f"per type, named NODE:TYPE ({host}:{entry.gpus[0][0] or SERVICE_DEFAULT}, ...), "
            "its CPUs and memory shared out by GPU count (docs/clusters.md)")


# -- text ---------------------------------------------------------------------------------

def _text_entries(path: Path) -> Iterator[_Entry]:
    lines = TextLines(path)
    columns: list[str] | None = None
    separator: str | None = None
    for raw in lines:
        text = raw.rstrip("\r\n")
        if not text.strip():
            continue
        if columns is None:
            separator = "|" if "|" in text else None
            columns = [c.strip().upper() for c in text.split(separator)]
            _check_header(path, columns)
            continue
        values = [v.strip() for v in text.split(separator)]
        where = InputLocation(str(path), lines.line)
        if len(values) != len(columns):
            raise InputError(where, f"expected {len(columns)} fields ({' '.join(columns)}), "
                             f"got {len(values)}")
        yield _text_entry(dict(zip(columns, values, strict=True)), where)
    if columns is None:
        raise InputError(InputLocation(str(path), 1), "empty sinfo file")


def _check_header(path: Path, columns: list[str]) -> None:
    where = InputLocation(str(path), 1)
    if not any(c in columns for c in NAME_COLUMNS):
        raise InputError(where, f"no NODELIST or HOSTNAMES column in the header (got "
                         f"{' '.join(columns)[:120]}): write the file with {COMMAND}, "
                         "header kept (no -h)")
    if "GRES" not in columns:
        raise InputError(where, f"no GRES column: the GPUs are unknown; write the file with "
                         f"{COMMAND}")


def _text_entry(values: dict[str, str], where: InputLocation) -> _Entry:
    column = next(c for c in NAME_COLUMNS if c in values)
    names = _hosts(values[column], _at(where, column))
    gres_at = _at(where, "GRES")
    gpus = _gres(values["GRES"], gres_at)
    cpus = _amount(values.get("CPUS", ""), _at(where, "CPUS"))
    memory = _amount(values.get("MEMORY", ""), _at(where, "MEMORY"))
    partition = values.get("PARTITION", "").rstrip("*")
    return _Entry(names, gpus, cpus, memory, partition, where, gres_at)


def _at(where: InputLocation, field: str) -> InputLocation:
    return InputLocation(where.path, where.line, field)


def _hosts(text: str, where: InputLocation) -> tuple[str, ...]:
    try:
        names = tuple(expand_hostlist(text))
    except ValueError as exc:
        raise InputError(_located(where), f"not a host list: {exc}") from None
    if not names:
        raise InputError(_located(where), "no node name")
    return names


def _gres(text: str, where: InputLocation) -> tuple[tuple[str, int], ...]:
    try:
        return gpu_kinds_of_gres(text)
    except ValueError as exc:
        raise InputError(_located(where), str(exc)) from None


def _amount(text: str, where: InputLocation) -> float:
    """A per-node count (CPUs, MB); empty or ``N/A``: 0 (not accounted)."""
    if text in ("", "N/A"):
        return 0.0
    if text.endswith("+") or "-" in text.lstrip("-"):
        raise InputError(where, f"{text!r}: the nodes of this line differ (sinfo groups "
                         f"nodes without -N): write the file with {COMMAND}")
    try:
        value = float(text)
    except ValueError:
        raise InputError(where, f"not a number: {text!r}") from None
    if not 0 <= value < 1e15:
        raise InputError(where, f"must be a number >= 0, got {text!r}")
    return value


# -- JSON ---------------------------------------------------------------------------------

def _json_entries(path: Path) -> Iterator[_Entry]:
    doc = _load_json(path)
    if isinstance(doc, dict) and isinstance(doc.get("sinfo"), list):
        for index, item in enumerate(doc["sinfo"]):
            yield _sinfo_item(path, f"sinfo[{index}]", item)
    elif isinstance(doc, dict) and isinstance(doc.get("nodes"), list):
        for index, item in enumerate(doc["nodes"]):
            yield _node_item(path, f"nodes[{index}]", item)
    else:
        raise InputError(InputLocation(str(path), 1), "Slurm JSON without 'sinfo' or 'nodes' "
                         "(write it with sinfo --json or scontrol show nodes --json)")


def _load_json(path: Path) -> Any:
    if path.stat().st_size > MAX_JSON_BYTES:
        raise InputError(InputLocation(str(path)), f"larger than {MAX_JSON_BYTES:,} bytes")
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(InputLocation(str(path), line), f"not JSON: {exc}") from None


class _Item:
    """One JSON entry: values by key path, errors naming the path and its line."""

    def __init__(self, path: Path, prefix: str, item: Any) -> None:
        self.path, self.prefix, self.item = path, prefix, item
        if not isinstance(item, dict):
            raise self.fail("", "expected an object")

    def get(self, dotted: str) -> Any:
        value: Any = self.item
        for part in dotted.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, dict) and "number" in value:  # Slurm's {set, infinite, number}
            value = value["number"] if value.get("set", True) else None
        return value

    def where(self, dotted: str = "") -> InputLocation:
        """Where ``dotted`` is, its line not yet looked up (``_located``)."""
        key = f"{self.prefix}.{dotted}" if dotted else self.prefix
        return InputLocation(str(self.path), None, key)

    def fail(self, dotted: str, message: str) -> InputError:
        return InputError(_located(self.where(dotted)), message)

    def count(self, *dotted: str) -> float:
        """The first of ``dotted`` present, a number >= 0 (none present: 0)."""
        for key in dotted:
            value = self.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise self.fail(key, f"must be a number >= 0, got {value!r}")
            return float(value)
        return 0.0

    def text(self, dotted: str) -> str:
        value = self.get(dotted)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(dotted, f"must be a string, got {value!r}")
        return value


def _sinfo_item(path: Path, prefix: str, raw: Any) -> _Entry:
    item = _Item(path, prefix, raw)
    names = item.get("nodes.nodes")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise item.fail("nodes.nodes", "expected a list of node names")
    hosts = tuple(h for n in names for h in _hosts(n, item.where("nodes.nodes")))
    for kind in ("cpus", "memory"):
        low, high = item.get(f"{kind}.minimum"), item.get(f"{kind}.maximum")
        if low is not None and high is not None and low != high:
            raise item.fail(f"{kind}.minimum", f"{low} to {high}: this entry's nodes differ; "
                            "write the file with scontrol show nodes --json")
    gpus = _gres(item.text("gres.total"), item.where("gres.total"))
    return _Entry(hosts, gpus, item.count("cpus.maximum"), item.count("memory.maximum"),
                  item.text("partition.name"), item.where(), item.where("gres.total"))


def _node_item(path: Path, prefix: str, raw: Any) -> _Entry:
    item = _Item(path, prefix, raw)
    name = item.text("name") or item.text("hostname")
    if not name:
        raise item.fail("name", "a node needs a name")
    partitions = item.get("partitions") or []
    if not isinstance(partitions, list) or not all(isinstance(p, str) for p in partitions):
        raise item.fail("partitions", "expected a list of partition names")
    gpus = _gres(item.text("gres"), item.where("gres"))
    return _Entry((name,), gpus, item.count("cpus"), item.count("real_memory"),
                  partitions[0] if partitions else "", item.where(), item.where("gres"))


def _located(where: InputLocation) -> InputLocation:
    """``where`` with its line: a JSON key path's (``sinfo[3].gres.total``) looked up now,
    for an error (none in a file too large to map)."""
    path = Path(where.path)
    if where.line is not None or where.field is None or path.stat().st_size > MAX_YAML_BYTES:
        return where
    from dlsched.yamlinput import parse_yaml

    _, src = parse_yaml(read_text(path), str(path))  # JSON is YAML: each key's line
    return InputLocation(where.path, src.line(where.field), where.field)
