"""A tenant file for a trace: its queues (Philly VCs, Helios VCs, ITP clusters, ...) as cluster
queues with quotas from their sizes (issue 6, "traces with tenants").

The rule (``docs/tenancy.md``):

- one cluster queue per distinct ``JobSpec.queue`` of the trace, named as the queue;
- one flavor per GPU type of the cluster (``gpu_types: [TYPE]``), so quotas are per GPU type;
- nominal quota per queue and flavor: with ``sizes`` (queue -> GPUs: a VC table such as
  Philly's servers x 8 or a Helios VC's GPU count), the queue's size split over the flavors in
  proportion to their GPUs; a queue not in the table gets 0 (it runs on borrowed GPUs only);
  without ``sizes``, each flavor's GPUs apportioned by the queues' demand *on that GPU type*
  (GPU-seconds of their jobs run alone, ``report.fairness.isolated_seconds``: a job pinned to
  some types counts on those only, an unpinned one on every type, each in proportion to the
  type's GPUs), largest remainders first (Hamilton's method), so the quotas add up to the
  cluster;
- CPUs, host memory and GPU memory, where some job of the trace asks for them: a quota beside
  each GPU quota, the flavor's amount per GPU times the GPUs (what its nodes have, where every
  node of the type accounts it; else the most any job asks per GPU). A resource a job asks
  for that its queue has no quota of is one it can never be admitted with (Kueue's rule):
  without these, a history export's jobs with ``gpu_memory_gb`` (MPS) never ran;
- ``borrowing``: all queues in one cohort, lending idle quota and reclaiming it
  (``reclaim_within_cohort: any``); otherwise strict quotas (no cohort).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlsched.cluster.cluster import Cluster
from dlsched.errors import InputError, InputLocation
from dlsched.perf.model import get_throughput_model
from dlsched.report.fairness import isolated_seconds
from dlsched.textinput import TextLines
from dlsched.workload.gpu_pins import with_cluster_spelling
from dlsched.workload.trace import Trace

COHORT = "all"


def tenants_for(trace: Trace, cluster: Cluster, sizes: Mapping[str, float] | None = None,
                borrowing: bool = True) -> dict[str, Any]:
    """The tenant document (as ``loader.parse_tenants`` reads it) for ``trace`` on ``cluster``."""
    queues = sorted({spec.queue for spec in trace.jobs})
    by_type = cluster.gpus_by_type()
    flavors = {kind: kind.casefold() for kind in by_type}
    on_type = demand_by_type(trace, cluster) if sizes is None else {}
    quotas: dict[str, dict[str, int]] = {q: {} for q in queues}
    for kind, gpus in by_type.items():
        if sizes is not None:
            share = gpus / cluster.num_gpus
            split = {q: round(float(sizes.get(q, 0.0)) * share) for q in queues}
        else:
            weight = on_type.get(kind, {})
            split = apportion(gpus, {q: weight.get(q, 0.0) for q in queues})
        for queue, amount in split.items():
            quotas[queue][flavors[kind]] = amount
    per_gpu = {flavors[kind]: amounts for kind, amounts in per_gpu_amounts(trace, cluster).items()}
    cluster_queues = []
    for queue in queues:
        entry: dict[str, Any] = {"name": queue, "quotas": {
            flavor: {"gpu": amount, **{resource: _amount(amount * each) for resource, each
                                       in per_gpu[flavor].items()}}
            for flavor, amount in quotas[queue].items()}}
        if borrowing:
            entry["cohort"] = COHORT
            entry["preemption"] = {"reclaim_within_cohort": "any"}
        cluster_queues.append(entry)
    doc: dict[str, Any] = {"flavors": [{"name": name, "gpu_types": [kind]}
                                       for kind, name in flavors.items()]}
    if borrowing:
        doc["cohorts"] = [{"name": COHORT}]
    doc["cluster_queues"] = cluster_queues
    return doc


# a job's ask per GPU (``JobSpec`` field) -> the tenant resource it is quota'd as (``quota.py``)
ASKED = {"cpu": "cpus_per_gpu", "memory": "memory_gb_per_gpu", "gpu_memory": "gpu_memory_gb"}


def per_gpu_amounts(trace: Trace, cluster: Cluster) -> dict[str, dict[str, float]]:
    """GPU type -> resource -> amount per GPU, for the resources beyond GPUs that some job of
    ``trace`` asks for: what the type's nodes have per GPU where every one of them accounts
    it (a node's ``cpus``/``memory_gb``, 0: unaccounted; each GPU's memory), else the most
    any job asks per GPU."""
    asked = {r: max((getattr(spec, field) for spec in trace.jobs), default=0.0)
             for r, field in ASKED.items()}
    out: dict[str, dict[str, float]] = {}
    for kind, gpus in cluster.gpus_by_type().items():
        nodes = [n for n in cluster.nodes if n.gpu_type == kind and n.num_gpus]
        have = {"cpu": [n.cpus for n in nodes], "memory": [n.memory_gb for n in nodes],
                "gpu_memory": [n.memory_per_gpu * n.num_gpus for n in nodes]}
        out[kind] = {r: (sum(have[r]) / gpus if all(have[r]) else most)
                     for r, most in asked.items() if most > 0}
    return out


def _amount(value: float) -> float | int:
    """A quota as the file shows it: whole where it is, else to 0.01 (rounded down, so the
    quotas never add up to more than the cluster has)."""
    value = math.floor(value * 100 + 1e-9) / 100
    return int(value) if value.is_integer() else value


def demand(trace: Trace) -> dict[str, float]:
    """GPU-seconds each queue's jobs need when run alone at their requested size."""
    alone = isolated_seconds(trace, get_throughput_model(trace.throughput))
    out: dict[str, float] = {}
    for spec in trace.jobs:
        seconds = alone.get(spec.job_id, 0.0)
        if math.isfinite(seconds):
            out[spec.queue] = out.get(spec.queue, 0.0) + spec.num_gpus * seconds
    return out


def demand_by_type(trace: Trace, cluster: Cluster) -> dict[str, dict[str, float]]:
    """``demand`` per GPU type of ``cluster`` (type -> queue -> GPU-seconds): a job pinned to
    some of its types (``JobSpec.gpu_types``, read as the cluster spells them) counts on those,
    an unpinned one on every type, split in proportion to the types' GPUs; a job pinned only
    to types the cluster lacks counts nowhere (it never runs)."""
    by_type = cluster.gpus_by_type()
    spelled = with_cluster_spelling(trace, cluster)
    alone = isolated_seconds(spelled, get_throughput_model(trace.throughput))
    out: dict[str, dict[str, float]] = {kind: {} for kind in by_type}
    for spec in spelled.jobs:
        seconds = alone.get(spec.job_id, 0.0)
        if not math.isfinite(seconds):
            continue
        kinds = [t for t in spec.gpu_types if t in by_type] if spec.gpu_types else list(by_type)
        gpus = sum(by_type[kind] for kind in kinds)
        for kind in kinds:
            queues = out[kind]
            queues[spec.queue] = (queues.get(spec.queue, 0.0)
                                  + spec.num_gpus * seconds * by_type[kind] / gpus)
    return out


def apportion(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """``total`` split in proportion to ``weights`` in whole units, largest remainders first
    (ties by name); all zero weights split nothing."""
    mass = sum(max(w, 0.0) for w in weights.values())
    if mass <= 0:
        return dict.fromkeys(weights, 0)
    exact = {k: total * max(w, 0.0) / mass for k, w in weights.items()}
    out = {k: math.floor(v) for k, v in exact.items()}
    rest = total - sum(out.values())
    for key in sorted(exact, key=lambda k: (-(exact[k] - out[k]), k))[:rest]:
        out[key] += 1
    return out


def read_sizes(path: Path, scale: float = 1.0) -> dict[str, float]:
    """Queue sizes from a CSV, times ``scale``: either two columns (queue, size; a header row is
    skipped), e.g. Philly's ``vc,node num`` with ``scale=8``; or a wide table with a ``date``
    column and one column per queue (Helios' ``<cluster>_vc_gpu_number_daily.csv``): its last
    row. Errors name the file, line and field."""
    lines = TextLines(path)  # UTF-8 (BOM allowed), bounded lines
    try:
        rows = list(csv.reader(lines, strict=True))
    except csv.Error as exc:
        raise InputError(InputLocation(str(path), lines.line), f"bad CSV: {exc}") from None
    if not rows:
        raise InputError(InputLocation(str(path)), "empty sizes file")
    header = [cell.strip() for cell in rows[0]]
    if header and header[0].casefold() == "date":
        last = rows[-1]
        return {name: _number(path, len(rows), name, value) * scale
                for name, value in zip(header[1:], last[1:], strict=False)
                if name.casefold() != "total"}
    out: dict[str, float] = {}
    for line, row in enumerate(rows, 1):
        if len(row) < 2:
            raise InputError(InputLocation(str(path), line),
                             f"expected two columns (queue, size), got {row}")
        if line == 1 and not _is_number(row[1]):
            continue  # a header
        out[row[0].strip()] = _number(path, line, "size", row[1]) * scale
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _number(path: Path, line: int, field: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(InputLocation(str(path), line, field),
                         f"expected a number, got {text!r}") from None
    if value < 0 or not math.isfinite(value):
        raise InputError(InputLocation(str(path), line, field),
                         f"must be a finite number >= 0, got {text!r}")
    return value
