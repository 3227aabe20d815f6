"""The Alibaba 2023 "openb" pod and node lists as the FGD experiment reads them (Weng et al.,
ATC'23 artifact, data/openb_*): every pod, CPU-only ones included (they take CPUs on GPU
nodes), as a ``Demand``; times are not needed, so the time-less ``multigpu*`` lists load too.

Pod list columns: ``name,cpu_milli,memory_mib,num_gpu,gpu_milli`` then optionally
``gpu_spec`` (GPU types ``A|B``) and any others (ignored). Node list: ``sn,cpu_milli,
memory_mib,gpu,model``. A bad value is an ``InputError`` naming the file, line and field.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from dlsched.cluster.cluster import Cluster, Node
from dlsched.errors import InputError, InputLocation
from dlsched.fragmentation.view import MILLI, Demand
from dlsched.wording import count_of

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


@dataclass(frozen=True)
class PodList:
    """Pods in file order: names and demands, and the line each came from."""

    path: str
    names: tuple[str, ...]
    demands: tuple[Demand, ...]
    lines: tuple[int, ...]


def read_nodes(path: Path, name: str = "openb") -> Cluster:
    """The nodes of an openb node list as a cluster (CPUs and memory per node)."""
    nodes = []
    for line, row in _rows(path, NODE_COLUMNS):
        number = _Field(path, line, row)
        gpus = number.integer("gpu", high=64)
        model = row["model"].strip()
        if gpus and not model:
            raise InputError(InputLocation(str(path), line, "model"), "a GPU node needs a model")
        nodes.append(Node(row["sn"].strip(), model, gpus,
                          cpus=number.integer("cpu_milli") / MILLI,
                          memory_gb=number.integer("memory_mib") / 1024))
    if not nodes:
        raise InputError(InputLocation(str(path), 2), "no nodes")
    try:
        return Cluster(name, tuple(nodes))
    except ValueError as exc:
        raise InputError(InputLocation(str(path)), str(exc)) from None


def read_pods(path: Path, cluster: Cluster | None = None) -> PodList:
    """The pods of an openb pod list; with ``cluster``, a pod no node could ever host (more
    CPUs, memory or GPUs than any node has) is an error naming its line and field."""
    names, demands, lines = [], [], []
    for line, row in _rows(path, POD_COLUMNS):
        demand = _pod(_Field(path, line, row), row)
        if cluster is not None:
            _check_fits(cluster, demand, InputLocation(str(path), line))
        names.append(row["name"].strip())
        demands.append(demand)
        lines.append(line)
    if not demands:
        raise InputError(InputLocation(str(path), 2), "no pods")
    return PodList(str(path), tuple(names), tuple(demands), tuple(lines))


def _pod(number: _Field, row: dict[str, str]) -> Demand:
    gpus = number.integer("num_gpu", high=64)
    milli = number.integer("gpu_milli", high=MILLI)
    if gpus and not milli:
        raise number.fail("gpu_milli",
                          f"a pod with {count_of(gpus, 'GPU')} must ask for some of each")
    if gpus > 1 and milli != MILLI:
        raise number.fail("gpu_milli", f"a pod with {gpus} GPUs must use whole GPUs "
                                       f"(1000), got {milli}")
    spec = (row.get("gpu_spec") or "").strip()
    types = tuple(sorted(t.strip() for t in spec.split("|") if t.strip())) if spec else ()
    return Demand(number.integer("cpu_milli"), number.integer("memory_mib"),
                  milli if gpus else 0, gpus, types)


def _check_fits(cluster: Cluster, demand: Demand, where: InputLocation) -> None:
    def fail(field: str, message: str) -> InputError:
        return InputError(InputLocation(where.path, where.line, field), message)

    most_cpu = float(cluster.node_cpus.max(initial=0)) * MILLI
    if most_cpu and demand.cpu_milli > most_cpu:
        raise fail("cpu_milli", f"asks for {demand.cpu_milli} milli-CPUs; the largest node has "
                                f"{most_cpu:g}")
    most_memory = float(cluster.node_memory_gb.max(initial=0)) * 1024
    if most_memory and demand.memory_mib > most_memory:
        raise fail("memory_mib", f"asks for {demand.memory_mib} MiB; the largest node has "
                                 f"{most_memory:g}")
    if demand.num_gpus > int(cluster.node_gpus.max(initial=0)):
        raise fail("num_gpu", f"asks for {count_of(demand.num_gpus, 'GPU')} on one node; the "
                              f"largest node has {int(cluster.node_gpus.max(initial=0))}")


@dataclass(frozen=True)
class _Field:
    path: Path
    line: int
    row: dict[str, str]

    def fail(self, field: str, message: str) -> InputError:
        return InputError(InputLocation(str(self.path), self.line, field), message)

    def integer(self, field: str, high: int | None = None) -> int:
        text = (self.row.get(field) or "").strip()
        try:
            value = int(text)
        except ValueError:
            raise self.fail(field, f"expected a whole number >= 0, got {text!r}") from None
        if value < 0 or (high is not None and value > high):
            bound = f" and <= {high}" if high is not None else ""
            raise self.fail(field, f"must be >= 0{bound}, got {value}")
        return value


def _rows(path: Path, columns: tuple[str, ...]):  # noqa: ANN202 - a generator of (line, row)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as exc:
        raise InputError(InputLocation(str(path)), f"cannot read: {exc.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        header = reader.fieldnames or []
        missing = [c for c in columns if c not in header]
        if missing:
            raise InputError(InputLocation(str(path), 1, missing[0]), "missing column")
        for row in reader:
            if None in row or any(v is None for v in row.values()):
                raise InputError(InputLocation(str(path), reader.line_num),
                                 f"expected {len(header)} fields")
            yield reader.line_num, row
