"""The nodes of a Slurm ``sinfo``/``scontrol`` file (``sinfo.py`` reads its entries): each
node once, checked as a cluster YAML's are; a node with GPUs of several types as one node per
type (a dlsched node has one GPU type; docs/clusters.md)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dlsched.cluster.cluster import Node
from dlsched.cluster.loader import MAX_GPUS, MAX_GPUS_PER_NODE, MAX_NODES, name_check
from dlsched.cluster.node_list import known_type
from dlsched.cluster.warnings import SERVICE_DEFAULT
from dlsched.errors import InputError, InputLocation
from dlsched.textinput import MAX_YAML_BYTES, read_text

COMMAND = 'sinfo -N -o "%N %c %m %G %P"'


@dataclass(frozen=True, slots=True)
class Entry:
    """One line's (or JSON entry's) nodes and what each has; ``where`` names it in errors
    (a JSON entry by its key path, its line looked up only for an error: ``located``)."""

    names: tuple[str, ...]
    gpus: tuple[tuple[str, int], ...]  # (GRES type, count) per type: ``gpu_kinds_of_gres``
    cpus: float
    memory_mib: float
    partition: str
    where: InputLocation
    gres_at: InputLocation  # its GRES field, for the warning about GPUs of several types


def nodes_of(path: Path, entries: Iterator[Entry], split: list[tuple[str, Entry]]
           ) -> tuple[Node, ...]:
    """The nodes, each once; a node with GPUs of several types as one node per type (its
    name and the entry added to ``split``, for the warning)."""
    nodes: dict[str, Node] = {}
    first_seen: dict[str, InputLocation] = {}
    hosts: dict[str, Entry] = {}  # each host's first entry (its GPUs per type)
    for entry in entries:
        for host in entry.names:
            parts = _node_parts(host, entry)
            first = hosts.setdefault(host, entry)
            if first.gpus != entry.gpus:
                raise InputError(located(entry.where), f"node {host!r} is listed with other "
                                 f"resources at {located(first.where)}")
            if len(parts) > 1 and parts[0].name not in nodes:
                split.append((host, entry))
            for node in parts:
                _add(nodes, first_seen, node, entry)
    total = sum(node.num_gpus for node in nodes.values())
    if total > MAX_GPUS:
        raise InputError(InputLocation(str(path)), f"{total:,} GPUs in all; the limit is "
                         f"{MAX_GPUS:,} (as a cluster YAML's)")
    if not any(node.num_gpus for node in nodes.values()):
        raise InputError(InputLocation(str(path)), "no node with GPUs (no 'gpu' GRES): "
                         f"write the file with {COMMAND}")
    return tuple(nodes.values())


def _add(nodes: dict[str, Node], first_seen: dict[str, InputLocation], node: Node,
         entry: Entry) -> None:
    """``node`` once: listed again (once per partition) it must have the same resources."""
    _check_names(node, entry)
    if node.num_gpus > MAX_GPUS_PER_NODE:
        raise InputError(located(entry.gres_at), f"{node.num_gpus:,} GPUs on node "
                         f"{node.name!r}; the limit is {MAX_GPUS_PER_NODE:,} (as a cluster YAML's)")
    name, known = node.name, nodes.get(node.name)
    if known is None:
        nodes[name], first_seen[name] = node, entry.where
        if len(nodes) > MAX_NODES:
            raise InputError(located(entry.where), f"more than {MAX_NODES:,} nodes")
    elif (known.num_gpus, known.gpu_type, known.cpus, known.memory_gb) != (
            node.num_gpus, node.gpu_type, node.cpus, node.memory_gb):
        raise InputError(located(entry.where), f"node {name!r} is listed with other "
                         f"resources at {located(first_seen[name])}")


def _check_names(node: Node, entry: Entry) -> None:
    """A node's and its partition's names as a cluster YAML takes them (``name_check``)."""
    for what, name in (("node name", node.name), ("partition", node.pool)):
        try:
            if name is not None:
                name_check(name)
        except ValueError as exc:
            raise InputError(located(entry.where), f"{what} {exc}") from None


def _node_parts(name: str, entry: Entry) -> list[Node]:
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


def split_note(split: list[tuple[str, Entry]]) -> str:
    host, entry = split[0]
    kinds = ", ".join(f"{count} {gres or 'untyped'}" for gres, count in entry.gpus)
    more = f" and {len(split) - 1} more such node{'s' if len(split) > 2 else ''}" \
        if len(split) > 1 else ""
    return (f"{located(entry.gres_at)}: node {host!r} has GPUs of {len(entry.gpus)} types "
            f"({kinds}){more}: a dlsched node has one GPU type, so each is read as one node "
            f"per type, named NODE:TYPE ({host}:{entry.gpus[0][0] or SERVICE_DEFAULT}, ...), "
            "its CPUs and memory shared out by GPU count (docs/clusters.md)")


def located(where: InputLocation) -> InputLocation:
    """``where`` with its line: a JSON key path's (``sinfo[3].gres.total``) looked up now,
    for an error (none in a file too large to map)."""
    path = Path(where.path)
    if where.line is not None or where.field is None or path.stat().st_size > MAX_YAML_BYTES:
        return where
    from dlsched.yamlinput import parse_yaml

    _, src = parse_yaml(read_text(path), str(path))  # JSON is YAML: each key's line
    return InputLocation(where.path, src.line(where.field), where.field)
