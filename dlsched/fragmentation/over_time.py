"""A simulated run's GPU fragmentation over time, for ``summary.json`` (runs with fractional
jobs): the FGD paper's measure (Weng et al., USENIX ATC'23 §3, ``measure.py``) of the cluster
as the run's segments left it, with the run's own jobs as the target workload.

Between two consecutive starts or ends of segments the cluster's state is fixed; there the
fragmented milli-GPUs are F(M) = sum over nodes of F_n(M) and the idle ones the free
milli-GPUs of the nodes that are up. Both are integrated over the utilization window (first
submission to last finish) and reported in GPUs: ``fragmented_gpus_mean`` and
``idle_gpus_mean`` (time averages), and ``fragmentation_rate`` = their ratio, the artifact's
``frag_gpu_milli`` over ``idle_gpu_milli`` (hkust-adsl/kubernetes-scheduler-simulator,
pkg/simulator/analysis.go) weighted by time. A node that is down (failed, in repair, a held
spare) is neither idle nor fragmented, as no scheduling cycle can place there: its GPUs count in
``down_gpus_mean``, so that idle + down + used GPUs make the cluster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.fragmentation.measure import TaskMix, fragmentation
from dlsched.fragmentation.view import MILLI, Demand, NodeView
from dlsched.scheduling.segments import Segment
from dlsched.workload.job import JobSpec


def demand_of(spec: JobSpec, workers: int | None = None) -> Demand:
    """What ``workers`` (default: all) of the job's workers ask of one node."""
    count = spec.num_gpus if workers is None else workers
    return Demand(round(spec.cpus_per_gpu * count * MILLI),
                  round(spec.memory_gb_per_gpu * count * 1024),
                  round(spec.gpu_share * MILLI), count, spec.gpu_types)


def fragmentation_over_time(cluster: Cluster, specs: Mapping[str, JobSpec],
                            segments: Sequence[Segment], window: tuple[float, float],
                            down_changes: Sequence[tuple[float, int, bool]] = ()
                            ) -> dict[str, object] | None:
    """The run's fragmentation figures (None without jobs or an empty window);
    ``down_changes``: (time, node, went down) in time order (``Scheduler.down_changes``)."""
    start, end = window
    if not specs or end <= start:
        return None
    mix = TaskMix.of(demand_of(spec) for spec in specs.values())
    view = NodeView.empty(cluster)
    per_node = _node_fragmentation(view, mix, np.arange(cluster.num_nodes))
    down = np.zeros(cluster.num_nodes, dtype=bool)
    sums = [0.0, 0.0, 0.0]  # fragmented, idle and down milli-GPU-seconds
    last = start
    for time, sign, change in _changes(segments, down_changes, end):
        if time > last:
            _add(sums, per_node, view, down, cluster, min(time, end) - last)
            last = min(time, end)
        if isinstance(change, Segment):
            nodes = _apply(view, cluster, specs[change.job_id], change, sign)
        else:
            down[change] = sign > 0
            nodes = np.array([change], dtype=np.int64)
        per_node[nodes] = np.where(down[nodes], 0, _node_fragmentation(view, mix, nodes))
    if last < end:
        _add(sums, per_node, view, down, cluster, end - last)
    fragmented, idle, gone = (value / ((end - start) * MILLI) for value in sums)
    return {"task_types": len(mix.types), "fragmented_gpus_mean": round(fragmented, 6),
            "idle_gpus_mean": round(idle, 6), "down_gpus_mean": round(gone, 6),
            "fragmentation_rate": round(fragmented / idle, 6) if idle > 0 else None}


def _add(sums: list[float], per_node: np.ndarray, view: NodeView, down: np.ndarray,
         cluster: Cluster, span: float) -> None:
    """A span of fixed state: fragmented, idle (up nodes) and down milli-GPU-seconds."""
    sums[0] += float(per_node.sum()) * span
    sums[1] += float(view.total[~down].sum()) * span
    if down.any():
        sums[2] += float(cluster.node_gpus[down].sum()) * MILLI * span


def _changes(segments: Iterable[Segment], down_changes: Iterable[tuple[float, int, bool]],
             end: float) -> list[tuple[float, int, Segment | int]]:
    """Each segment's start (+1) and end (-1; a segment still open ends with the window) and
    each node going down (+1) or up (-1), in time order; at equal times segments end first
    (the GPUs are free before the next start), and a node goes down after the segments it
    ended and comes up before the segments that start on it."""
    changes: list[tuple[float, int, int, Segment | int]] = []
    for segment in segments:
        if not segment.gpus:
            continue
        changes.append((segment.start, 2, 1, segment))
        changes.append((end if segment.end is None else segment.end, 0, -1, segment))
    for time, node, went_down in down_changes:
        changes.append((time, 1, 1 if went_down else -1, node))
    changes.sort(key=lambda change: (change[0], change[1]))
    return [(time, sign, change) for time, _, sign, change in changes]


def _apply(view: NodeView, cluster: Cluster, spec: JobSpec, segment: Segment,
           sign: int) -> np.ndarray:
    """Take (sign 1) or give back (-1) the segment's shares and CPUs; the nodes it changed."""
    workers: dict[int, int] = {}
    for gpu, share in zip(segment.gpus, segment.shares, strict=True):
        node = int(cluster.gpu_node[gpu])
        index = gpu - int(cluster.node_first_gpu[node])
        view.free[node, index] -= sign * round(share * MILLI)
        workers[node] = workers.get(node, 0) + 1
    nodes = np.fromiter(workers, dtype=np.int64)
    for node, count in workers.items():
        view.cpu_left[node] -= sign * demand_of(spec, count).cpu_milli
        view.total[node] = int(view.free[node].sum())
    return nodes


def _node_fragmentation(view: NodeView, mix: TaskMix, nodes: np.ndarray) -> np.ndarray:
    return fragmentation(view.free[nodes], view.cpu_left[nodes], view.gpu_type[nodes], mix,
                         view.type_names)
