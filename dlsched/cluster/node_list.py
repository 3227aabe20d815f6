"""Clusters from the node lists that public traces publish, as CSV files (``--cluster
FILE.csv``): a user points dlsched at the cluster beside a trace they downloaded.

Formats, told apart by their header (docs/clusters.md):

- ``alibaba-2023`` (``openb_node_list_*.csv``): ``sn,cpu_milli,memory_mib,gpu,model``; CPUs
  ``cpu_milli / 1000``, memory ``memory_mib / 1024`` GiB; an empty ``model`` is a CPU node.
- ``alibaba-pai-2020`` (``pai_machine_spec.csv``, as released without a header, or with one):
  ``machine,gpu_type,cap_cpu,cap_mem,cap_gpu``; a ``CPU`` type is a CPU node.
- ``alibaba-spot-2026`` (``node_info_df.csv``): ``gpu_model,gpu_capacity_num,cpu_num,
  node_name``; memory not given.

A GPU model that names a known type's product (``A100-SXM4-80GB``) takes that type's name
(``A100-80G``: ``workload.gpu_pins``); others keep theirs (and are named in the unknown-type
warning). No topology is published in any of them: one rack, no NVLink. Errors name the
file, the line and the field.
"""

from __future__ import annotations

import csv
import functools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from dlsched.cluster.cluster import Cluster, Node
from dlsched.cluster.gpu_types import GPU_TYPES
from dlsched.cluster.loader import MAX_GPUS, MAX_GPUS_PER_NODE, MAX_NODES
from dlsched.errors import InputError, InputLocation
from dlsched.textinput import TextLines
from dlsched.wording import count_of


@dataclass(frozen=True)
class _Row:
    path: str
    line: int
    values: dict[str, str]

    def fail(self, field: str | None, message: str) -> InputError:
        return InputError(InputLocation(self.path, self.line, field), message)

    def text(self, field: str) -> str:
        return self.values.get(field, "").strip()

    def number(self, field: str) -> float:
        raw = self.text(field)
        try:
            value = float(raw)
        except ValueError:
            raise self.fail(field, f"not a number: {raw!r}") from None
        if not math.isfinite(value) or value < 0:
            raise self.fail(field, f"must be a finite number >= 0, got {raw!r}")
        return value

    def whole(self, field: str) -> int:
        value = self.number(field)
        if value != int(value):
            raise self.fail(field, f"not a whole number: {self.text(field)!r}")
        return int(value)

    def gpus(self, field: str) -> int:
        """A node's GPU count, within a cluster YAML's limit per node."""
        value = self.whole(field)
        if value > MAX_GPUS_PER_NODE:
            raise self.fail(field, f"{value:,} GPUs on one node; the limit is "
                                   f"{MAX_GPUS_PER_NODE:,}")
        return value


def _openb(row: _Row) -> Node:
    gpus, model = row.gpus("gpu"), row.text("model")
    if gpus and not model:
        raise row.fail("model", f"a node with {count_of(gpus, 'GPU')} needs its GPU model")
    return Node(row.text("sn"), known_type(model) if gpus else "", gpus,
                row.number("cpu_milli") / 1000, row.number("memory_mib") / 1024)


def _pai(row: _Row) -> Node:
    gpus, model = row.gpus("cap_gpu"), row.text("gpu_type")
    return Node(row.text("machine"), known_type(model) if gpus else "", gpus,
                row.number("cap_cpu"), row.number("cap_mem"))


def _spot(row: _Row) -> Node:
    gpus, model = row.gpus("gpu_capacity_num"), row.text("gpu_model")
    return Node(f"node-{row.text('node_name')}", known_type(model) if gpus else "", gpus,
                row.number("cpu_num"))


FORMATS: dict[tuple[str, ...], tuple[str, Callable[[_Row], Node]]] = {
    ("sn", "cpu_milli", "memory_mib", "gpu", "model"): ("alibaba-2023", _openb),
    ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"): ("alibaba-pai-2020", _pai),
    ("gpu_model", "gpu_capacity_num", "cpu_num", "node_name"): ("alibaba-spot-2026", _spot),
}
PAI_COLUMNS = ("machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu")


@functools.cache
def known_type(model: str) -> str:
    """The known GPU type a product name means (``A100-SXM4-80GB`` -> ``A100-80G``), else the
    name as given."""
    from dlsched.workload.gpu_pins import cluster_type

    if model in GPU_TYPES:
        return model
    by_lower: dict[str, str | None] = {name.lower(): name for name in GPU_TYPES}
    return cluster_type(model, by_lower) or model


def load_node_list(path: Path) -> Cluster:
    """The cluster of a node-list CSV (module docstring); named after the file."""
    nodes: list[Node] = []
    seen: dict[str, int] = {}
    gpus = 0
    for build, row in _rows(path):
        try:
            node = build(row)
        except ValueError as exc:  # the node's own checks
            raise row.fail(None, str(exc)) from None
        if not node.name:
            raise row.fail(None, "a node needs a name")
        if node.name in seen:
            raise row.fail(None, f"node {node.name!r} is listed twice: on line "
                                 f"{seen[node.name]} and on line {row.line}")
        seen[node.name] = row.line
        nodes.append(node)
        gpus += node.num_gpus
        if len(nodes) > MAX_NODES or gpus > MAX_GPUS:
            raise row.fail(None, f"more than {MAX_NODES:,} nodes or {MAX_GPUS:,} GPUs in all "
                                 "(a cluster YAML's limits)")
    if not any(n.num_gpus for n in nodes):
        raise InputError(InputLocation(str(path)), "no GPU node in this node list")
    return Cluster(path.stem, tuple(nodes))


def _rows(path: Path) -> Iterator[tuple[Callable[[_Row], Node], _Row]]:
    reader = csv.reader(TextLines(path), strict=True)
    try:
        first = next(reader, None)
        if first is None:
            raise InputError(InputLocation(str(path), 1), "empty node list")
        header = tuple(c.strip() for c in first)
        found = FORMATS.get(header)
        columns = header
        if found is None and len(header) == len(PAI_COLUMNS) and _numbers(header[2:]):
            found, columns = FORMATS[PAI_COLUMNS], PAI_COLUMNS  # PAI's, without its header
            yield found[1], _Row(str(path), 1, dict(zip(columns, first, strict=True)))
        if found is None:
            known = "; ".join(",".join(c) for c in FORMATS)
            raise InputError(InputLocation(str(path), 1),
                             f"not a node list dlsched reads (headers: {known}): got "
                             f"{','.join(header)[:120]}")
        for line, values in enumerate(reader, start=2):
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(columns):
                raise InputError(InputLocation(str(path), line),
                                 f"expected {len(columns)} fields, got {len(values)}")
            yield found[1], _Row(str(path), line, dict(zip(columns, values, strict=True)))
    except csv.Error as exc:
        raise InputError(InputLocation(str(path), reader.line_num), f"bad CSV: {exc}") from None


def _numbers(values: tuple[str, ...]) -> bool:
    try:
        for value in values:
            float(value)
    except ValueError:
        return False
    return True
