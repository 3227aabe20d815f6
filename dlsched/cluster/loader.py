"""Clusters from YAML files and back; the schema is documented in docs/clusters.md.

Every mistake raises ``InputError`` naming the file, the line and the key path
(``node_groups[2].gpus``); unknown keys are rejected with the closest known key as a hint.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from dlsched.cluster.cluster import Cluster, Node
from dlsched.cluster.topology import Topology
from dlsched.textinput import control_character, read_text
from dlsched.wording import count_of
from dlsched.yamlinput import YamlSource, number_read_as_text, parse_yaml

__all__ = ["YamlSource", "dump_cluster_yaml", "load_cluster_yaml", "name_check", "number_check",
           "parse_cluster_yaml", "parse_yaml", "unknown_key_message"]

DEFAULT_RACK = Node.__dataclass_fields__["rack"].default
MAX_NAME = 256  # a node, rack, pool or GPU type name


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """``count`` identical nodes ``<prefix>-<i>``, ``i`` zero-padded to the width of count-1.

    ``prefix`` defaults to the GPU type in lower case (``cpu`` without GPUs). ``nodes_per_rack``
    fills racks ``<prefix>-rack-<k>`` in order; else all go to ``rack`` (default: ``rack-0``).
    """

    count: int
    gpu_type: str
    gpus: int
    prefix: str = ""
    cpus: float = 0.0
    memory_gb: float = 0.0
    nvlink_domain: int = 0
    rack: str | None = None
    nodes_per_rack: int | None = None
    pool: str | None = None
    gpu_memory_gb: float = 0.0

    @property
    def name_prefix(self) -> str:
        return self.prefix or (self.gpu_type.lower() if self.gpus and self.gpu_type else "cpu")

    def expand(self) -> list[Node]:
        width = len(str(max(self.count - 1, 0)))
        return [self._node(f"{self.name_prefix}-{i:0{width}d}", i) for i in range(self.count)]

    def _node(self, name: str, index: int) -> Node:
        return Node(name, self.gpu_type, self.gpus, self.cpus, self.memory_gb,
                    self._rack(index), self.nvlink_domain, self.pool, self.gpu_memory_gb)

    def _rack(self, index: int) -> str:
        if self.nodes_per_rack:
            return f"{self.name_prefix}-rack-{index // self.nodes_per_rack}"
        return self.rack or DEFAULT_RACK


MAX_NODES = 100_000  # nodes of one cluster (a group's count, or all of them)
MAX_GPUS_PER_NODE = 1_024
# GPUs of one cluster: 100,000 nodes of 1,024 would be 102 M, whose per-GPU tables took the
# core 5.5 GB and 20 s before a MemoryError. 2^20 is 64 x the largest built-in (16,384 H100).
MAX_GPUS = 1_048_576
MAX_NUMBER = 1e15  # any other number (CPUs, memory, bandwidths, quotas)


def number_check(low: int, integer: bool, above: bool = False,
                 high: float = MAX_NUMBER) -> Callable[[Any], Any]:
    """A value check: it returns the value or raises ValueError with a message for the user.
    NaN, infinities and values above ``high`` are refused."""
    kind = "an integer" if integer else "a number"

    def check(value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int if integer else int | float):
            hint = number_read_as_text(value, integer)
            raise ValueError(f"must be {kind}, got {_short(value)}{hint}")
        if value != value:  # NaN (.nan)
            raise ValueError(f"must be a finite number, got {_short(value)}")
        if not value >= low or (above and value == low):
            raise ValueError(f"must be {'>' if above else '>='} {low}, got {_short(value)}")
        if not value <= high:
            raise ValueError(f"must be at most {high:,g}, got {_short(value)}")
        return value
    return check


def _short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (a huge number or string stays readable)."""
    text = repr(value) if not isinstance(value, int) or value < 10**limit else "a huge integer"
    return text if len(text) <= limit else text[:limit] + "..."


def _instance_of(kind: type) -> Callable[[Any], Any]:
    def check(value: Any) -> Any:
        if not isinstance(value, kind):
            raise ValueError(f"must be a {'mapping' if kind is dict else 'list'}")
        return value
    return check


def name_check(value: Any) -> str:
    """A name: a non-empty string of at most ``MAX_NAME`` characters, no control character."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {_short(value)}")
    if len(value) > MAX_NAME:
        raise ValueError(f"is {len(value):,} characters long; the limit is {MAX_NAME}")
    control = control_character(value)
    if control is not None:
        raise ValueError(f"has a {control}")
    return value


_text = name_check


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(str(value) if isinstance(value, int) else value)


_COUNT, _NONNEG = number_check(0, True), number_check(0, False)
_NODES = number_check(0, True, high=MAX_NODES)
_GPUS = number_check(0, True, high=MAX_GPUS_PER_NODE)
_POSITIVE_INT = number_check(1, True, high=MAX_NODES)
_NODE_CHECKS: dict[str, Callable[[Any], Any]] = {
    "gpu_type": _text, "gpus": _GPUS, "cpus": _NONNEG, "memory_gb": _NONNEG,
    "nvlink_domain": _GPUS, "pool": _optional_text, "gpu_memory_gb": _NONNEG,
}
_CHECKS = {
    "cluster": {"name": _text, "topology": _instance_of(dict),
                "node_groups": _instance_of(list), "nodes": _instance_of(list)},
    "topology": {f.name: number_check(0, False, above=True) for f in fields(Topology)},
    "group": {"count": _NODES, **_NODE_CHECKS, "prefix": _text, "rack": _text,
              "nodes_per_rack": _POSITIVE_INT},
    "node": {"name": _text, **_NODE_CHECKS, "rack": _text},
}
_REQUIRED = {"cluster": ("name",), "topology": (), "group": ("count", "gpus"),
             "node": ("name", "gpus")}


def _checked(raw: Any, kind: str, key_path: str, src: YamlSource) -> dict[str, Any]:
    """The mapping ``raw`` with every value checked; unknown and missing keys rejected."""
    if not isinstance(raw, dict):
        raise src.error(key_path, f"must be a mapping, got {type(raw).__name__}")
    checks, prefix = _CHECKS[kind], f"{key_path}." if key_path else ""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in checks:
            raise src.error(prefix + str(key), unknown_key_message(key, checks)
                            + _other_kind(kind, key))
        try:
            out[key] = checks[key](value)
        except ValueError as exc:
            raise src.error(prefix + key, str(exc)) from None
    for key in _REQUIRED[kind]:
        if key not in out:
            raise src.error(key_path, f"missing required key '{key}'")
    _check_node_rules(out, key_path, src)
    return out


def _other_kind(kind: str, key: object) -> str:
    """Where a node's key that only groups take belongs (``count`` under ``nodes:``), and
    the other way round."""
    if (kind, key) == ("group", "name"):
        return " (a group names its nodes PREFIX-0, PREFIX-1, ...: give 'prefix')"
    other = {"node": ("group", "node_groups"), "group": ("node", "nodes")}.get(kind)
    if other is None or key not in _CHECKS[other[0]]:
        return ""
    return f" ('{key}' is a key of {other[1]}: move the entry there)"


def _check_node_rules(values: dict[str, Any], key_path: str, src: YamlSource) -> None:
    """Rules between the keys of one node or group."""
    if values.get("gpus") and "gpu_type" not in values:
        raise src.error(key_path, "missing required key 'gpu_type' (the node has GPUs)")
    domain = values.get("nvlink_domain", 0)
    if domain and values["gpus"] % domain:
        raise src.error(f"{key_path}.nvlink_domain",
                        f"{domain} does not divide the node's {count_of(values['gpus'], 'GPU')}")
    if "rack" in values and "nodes_per_rack" in values:
        raise src.error(key_path, "give either 'rack' or 'nodes_per_rack', not both")


def unknown_key_message(key: object, known: Mapping[str, object]) -> str:
    close = difflib.get_close_matches(str(key), list(known), n=1)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown key '{key}'{hint}; known keys: {', '.join(known)}"


def _group(raw: Any, key_path: str, src: YamlSource) -> NodeGroup:
    return NodeGroup(**{"gpu_type": "", **_checked(raw, "group", key_path, src)})


def _node(raw: Any, key_path: str, src: YamlSource) -> Node:
    values = _checked(raw, "node", key_path, src)
    values["num_gpus"] = values.pop("gpus")
    return Node(**{"gpu_type": "", **values})


def _check_gpus(total: int, key_path: str, src: YamlSource) -> None:
    if total > MAX_GPUS:
        raise src.error(key_path, f"the cluster would have more than {MAX_GPUS:,} GPUs "
                                  f"({total:,} so far)")


def _nodes(doc: dict[str, Any], src: YamlSource) -> list[Node]:
    groups = [(_group(raw, f"node_groups[{i}]", src), f"node_groups[{i}]")
              for i, raw in enumerate(doc.get("node_groups", []))]
    total = len(doc.get("nodes", []))
    gpus = 0
    for group, key_path in groups:  # before any node is made
        total += group.count
        gpus += group.count * group.gpus
        if total > MAX_NODES:
            raise src.error(f"{key_path}.count", f"the cluster would have more than "
                                                 f"{MAX_NODES:,} nodes")
        _check_gpus(gpus, f"{key_path}.count", src)
    placed = [(node, key_path) for group, key_path in groups for node in group.expand()]
    for i, raw in enumerate(doc.get("nodes", [])):
        placed.append((_node(raw, f"nodes[{i}]", src), f"nodes[{i}]"))
        gpus += placed[-1][0].num_gpus
        _check_gpus(gpus, f"nodes[{i}].gpus", src)
    if not placed:
        raise src.error("", "the cluster has no nodes: give 'node_groups' or 'nodes'")
    seen: dict[str, str] = {}
    for node, key_path in placed:
        if node.name in seen:
            raise src.error(key_path, _name_clash(node.name, seen[node.name], key_path))
        seen[node.name] = key_path
    return [node for node, _ in placed]


def _name_clash(name: str, first: str, again: str) -> str:
    """Where a node name is used twice, and the way out (a 'prefix' hint alone sent users with
    two explicit nodes looking for a key that nodes do not have)."""
    if not first.startswith("node_groups"):
        hint = "each node needs a name of its own"
    elif again.startswith("node_groups"):
        hint = "groups: give each a distinct 'prefix'"
    else:
        hint = f"rename {again} or give {first} a 'prefix'"
    return f"node name '{name}' is used twice, by {first} and {again} ({hint})"


def parse_cluster_yaml(text: str, source: str = "<string>") -> Cluster:
    """A cluster from YAML text; ``source`` names it in errors."""
    doc, src = parse_yaml(text, source)
    if doc is None:
        raise src.error("", "the file is empty")
    values = _checked(doc, "cluster", "", src)
    topology = Topology(**_checked(values.get("topology", {}), "topology", "topology", src))
    return Cluster(values["name"], tuple(_nodes(values, src)), topology)


def load_cluster_yaml(path: str | Path) -> Cluster:
    """A cluster from a YAML file (schema in docs/clusters.md)."""
    return parse_cluster_yaml(read_text(path), str(path))


def dump_cluster_yaml(cluster: Cluster) -> str:
    """YAML that ``parse_cluster_yaml`` turns back into an equal cluster, host and GPU memory
    rounded to 0.01 GB (``_memory_gb``; a measured size's 15 digits are noise to a reader).

    Runs of nodes that a ``NodeGroup`` reproduces exactly are written as groups; the rest, and
    everything after the first such node (to keep the GPU numbering), one by one.
    """
    groups: list[NodeGroup] = []
    explicit: list[Node] = []
    i = 0
    while i < len(cluster.nodes):
        group = None if explicit else _group_at(cluster.nodes, i)
        if group is None:
            explicit.append(cluster.nodes[i])
        else:
            groups.append(group)
        i += group.count if group else 1
    doc: dict[str, Any] = {"name": cluster.name, "topology": _plain(cluster.topology)}
    if groups:
        doc["node_groups"] = [_plain(g, keep=("count", "gpus")) for g in groups]
    if explicit:
        doc["nodes"] = [_plain(n, keep=("name", "gpus")) for n in explicit]
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=200)
    return f"# {cluster.describe()}\n{body}"


def _group_at(nodes: tuple[Node, ...], start: int) -> NodeGroup | None:
    """The group that reproduces the nodes from ``start`` on, if their names and racks fit one."""
    first = nodes[start]
    prefix, dash, index = first.name.rpartition("-")
    if not dash or set(index) != {"0"}:
        return None
    end = start
    while end < len(nodes) and _same_shape(nodes[end], first, prefix):
        end += 1
    count = min(end - start, 10 ** len(index))
    racks = [n.rack for n in nodes[start:start + count]]
    one_rack = len(set(racks)) == 1
    group = NodeGroup(count, first.gpu_type, first.num_gpus, prefix, first.cpus,
                      first.memory_gb, first.nvlink_domain, pool=first.pool,
                      rack=first.rack if one_rack and first.rack != DEFAULT_RACK else None,
                      nodes_per_rack=None if one_rack else racks.count(first.rack),
                      gpu_memory_gb=first.gpu_memory_gb)
    if prefix == replace(group, prefix="").name_prefix:
        group = replace(group, prefix="")
    return group if group.expand() == list(nodes[start:start + count]) else None


def _same_shape(node: Node, first: Node, prefix: str) -> bool:
    keys = ("gpu_type", "num_gpus", "cpus", "memory_gb", "nvlink_domain", "pool",
            "gpu_memory_gb")
    same = all(getattr(node, k) == getattr(first, k) for k in keys)
    return same and node.name.rpartition("-")[0] == prefix


def _plain(obj: Any, keep: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of a node, group or topology as YAML values, defaults left out."""
    out = {}
    for field in fields(obj):
        key, value = "gpus" if field.name == "num_gpus" else field.name, getattr(obj, field.name)
        if key in keep or value not in (None, "", 0, DEFAULT_RACK):
            if key.endswith("memory_gb"):
                value = _memory_gb(value)
            out[key] = int(value) if isinstance(value, float) and value.is_integer() else value
    return out


MEMORY_DECIMALS = 2  # GB written to 0.01 (10 MB): a measured 23.540279388427734 as 23.54


def _memory_gb(value: float) -> float:
    """``value`` rounded to ``MEMORY_DECIMALS``; a number with no more decimals (whole, or
    read from a YAML file) is written as it was read. A positive value that would round to
    0 (a node with no memory counted) is kept exact."""
    rounded = round(float(value), MEMORY_DECIMALS)
    return rounded if rounded or not value else float(value)
