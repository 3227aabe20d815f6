"""The running service's cluster as a cluster YAML file (``dlsched history cluster``), so that
a replay runs on the nodes and GPU types the history ran on. The API's ``/v1/cluster`` knows
nodes, GPU types and counts; CPUs, memory and topology keep the loader's defaults."""

from __future__ import annotations

from typing import Any

import yaml


def cluster_yaml(view: Any) -> str:
    """``view``: the API's ``ClusterView``. One ``nodes`` entry per node, in the service's
    order (GPU ids are numbered node by node, so the order is kept)."""
    nodes = [{"name": node.name, "gpu_type": node.gpu_type, "gpus": len(node.gpus)}
             for node in view.nodes]
    return yaml.safe_dump({"name": view.name, "nodes": nodes}, sort_keys=False)
