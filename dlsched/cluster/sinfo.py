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
from pathlib import Path
from typing import Any

from dlsched.cluster.cluster import Cluster
from dlsched.cluster.hostlist import expand_hostlist, gpu_kinds_of_gres
from dlsched.cluster.sinfo_nodes import COMMAND, Entry, located, nodes_of, split_note
from dlsched.errors import ClusterWarning, InputError, InputLocation
from dlsched.textinput import TextLines

NAME_COLUMNS = ("NODELIST", "HOSTNAMES")
MAX_JSON_BYTES = 256 << 20


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
    split: list[tuple[str, Entry]] = []
    cluster = Cluster(path.stem, nodes_of(path, entries, split))
    if split:
        warnings.warn(ClusterWarning(split_note(split)), stacklevel=2)
    return cluster


# -- text ---------------------------------------------------------------------------------

def _text_entries(path: Path) -> Iterator[Entry]:
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


def _text_entry(values: dict[str, str], where: InputLocation) -> Entry:
    column = next(c for c in NAME_COLUMNS if c in values)
    names = _hosts(values[column], _at(where, column))
    gres_at = _at(where, "GRES")
    gpus = _gres(values["GRES"], gres_at)
    cpus = _amount(values.get("CPUS", ""), _at(where, "CPUS"))
    memory = _amount(values.get("MEMORY", ""), _at(where, "MEMORY"))
    partition = values.get("PARTITION", "").rstrip("*")
    return Entry(names, gpus, cpus, memory, partition, where, gres_at)


def _at(where: InputLocation, field: str) -> InputLocation:
    return InputLocation(where.path, where.line, field)


def _hosts(text: str, where: InputLocation) -> tuple[str, ...]:
    try:
        names = tuple(expand_hostlist(text))
    except ValueError as exc:
        raise InputError(located(where), f"not a host list: {exc}") from None
    if not names:
        raise InputError(located(where), "no node name")
    return names


def _gres(text: str, where: InputLocation) -> tuple[tuple[str, int], ...]:
    try:
        return gpu_kinds_of_gres(text)
    except ValueError as exc:
        raise InputError(located(where), str(exc)) from None


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

def _json_entries(path: Path) -> Iterator[Entry]:
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
        """Where ``dotted`` is, its line not yet looked up (``located``)."""
        key = f"{self.prefix}.{dotted}" if dotted else self.prefix
        return InputLocation(str(self.path), None, key)

    def fail(self, dotted: str, message: str) -> InputError:
        return InputError(located(self.where(dotted)), message)

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


def _sinfo_item(path: Path, prefix: str, raw: Any) -> Entry:
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
    return Entry(hosts, gpus, item.count("cpus.maximum"), item.count("memory.maximum"),
                  item.text("partition.name"), item.where(), item.where("gres.total"))


def _node_item(path: Path, prefix: str, raw: Any) -> Entry:
    item = _Item(path, prefix, raw)
    name = item.text("name") or item.text("hostname")
    if not name:
        raise item.fail("name", "a node needs a name")
    partitions = item.get("partitions") or []
    if not isinstance(partitions, list) or not all(isinstance(p, str) for p in partitions):
        raise item.fail("partitions", "expected a list of partition names")
    gpus = _gres(item.text("gres"), item.where("gres"))
    return Entry((name,), gpus, item.count("cpus"), item.count("real_memory"),
                  partitions[0] if partitions else "", item.where(), item.where("gres"))
