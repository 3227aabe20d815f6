"""Warnings about a cluster that loads but may not mean what its author meant.

An unknown GPU type (``a100`` for ``A100``, ``V100-32G``) still loads, at relative speed 1.0 and
unknown memory (``gpu_types.gpu_type``), and then silently runs at V100 speed under the linear
model and never matches a measured table: say so, naming the line and the known types.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from dlsched.cluster.cluster import Cluster
from dlsched.cluster.gpu_types import GPU_TYPES
from dlsched.errors import DlschedError, InputLocation

# The service's GPUs when `dlsched serve` is not told their type: a cluster written by
# `history cluster` has it, and its replay (durations measured on those GPUs) needs no speed.
SERVICE_DEFAULT = "generic"


def unknown_gpu_types(cluster: Cluster, source: str) -> list[str]:
    """One warning per GPU type of ``cluster`` that dlsched does not know; ``source`` is the
    cluster argument (a built-in name or a YAML file, whose lines the warnings then name)."""
    unknown = sorted({n.gpu_type for n in cluster.nodes if n.num_gpus} - set(GPU_TYPES)
                     - {SERVICE_DEFAULT})
    lines = _type_lines(source) if unknown else {}
    warnings = []
    for name in unknown:
        where = lines.get(name, InputLocation(source))
        close = _closest(name)
        hint = f" (did you mean {close!r}?)" if close else ""
        warnings.append(f"{where}: unknown GPU type {name!r}{hint}: it runs at V100 speed "
                        f"under the linear model and matches no measured table; known types: "
                        f"{', '.join(GPU_TYPES)}")
    return warnings


def _closest(name: str) -> str | None:
    by_lower = {known.lower(): known for known in GPU_TYPES}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def _type_lines(source: str) -> dict[str, InputLocation]:
    """Each GPU type's first ``gpu_type`` key in the YAML file ``source`` (none for a built-in
    cluster or a file that cannot be read again)."""
    if not Path(source).is_file():
        return {}
    from dlsched.yamlinput import load_yaml_file

    try:
        doc, src = load_yaml_file(source)
    except DlschedError:
        return {}
    found: dict[str, InputLocation] = {}
    for section in ("node_groups", "nodes"):
        entries: Any = doc.get(section) if isinstance(doc, dict) else None
        for i, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, dict) and isinstance(entry.get("gpu_type"), str):
                key = f"{section}[{i}].gpu_type"
                found.setdefault(entry["gpu_type"], InputLocation(source, src.line(key), key))
    return found
