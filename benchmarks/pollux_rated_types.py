"""Pollux on gavel-108 under gavel-physical, where some jobs are rated 0 on some GPU types
(ResNet-50 at batch 128 on a K80): how many GPUs its search planned that placement then cut.

Run on demand: ``python benchmarks/pollux_rated_types.py [--jobs 100] [--elastic 8]
[--nodes 9]``. The first ``--jobs`` jobs of ``gavel-continuous-1000`` on ``--nodes`` 4-GPU
nodes of each of K80, P100 and V100 (9: gavel-108; fewer: a contended cluster). ``--elastic
N`` (0: off) declares every job elastic from 1 to ``max(N, its size)`` GPUs (Gavel's jobs are
rigid and have no goodput profile, so Pollux would keep them at their size). Only ResNet-50 at
batch 128 is rated 0 anywhere (on K80), 3 of the first 100 jobs: ``--resnet50 K`` makes every
K-th job one (0: as in the trace). Prints jobs finished, mean JCT and makespan (hours),
CPU seconds of the simulation, Pollux rounds, the GPUs planned beyond what placement gave
(counted around ``pollux_place.place``) and the GPUs its rule 6 (``fill``) then handed out
(counted around ``pollux_place.fill``).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import dlsched.policies.pollux as pollux_module
from dlsched.cluster.builtin import resolve_cluster
from dlsched.cluster.cluster import Cluster
from dlsched.cluster.loader import NodeGroup
from dlsched.report.metrics import summarize
from dlsched.scheduling.registry import build_policy
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.workload.bundled import resolve_trace
from dlsched.workload.trace import Trace

TRACE, CLUSTER, THROUGHPUT = "gavel-continuous-1000", "gavel-108", "gavel-physical"


def cluster(nodes: int) -> Cluster:
    if nodes == 9:
        return resolve_cluster(CLUSTER)
    groups = [NodeGroup(nodes, t, 4) for t in ("K80", "P100", "V100")]
    return Cluster(f"gavel-{12 * nodes}", tuple(n for g in groups for n in g.expand()))


def workload(jobs: int, elastic: int, resnet50: int) -> Trace:
    trace = resolve_trace(TRACE)
    specs = trace.jobs[:jobs]
    if resnet50:
        specs = tuple(replace(s, model="ResNet-50", batch_size=128) if i % resnet50 == 0 else s
                      for i, s in enumerate(specs))
    if elastic:
        specs = tuple(replace(s, min_gpus=1, max_gpus=max(elastic, s.num_gpus)) for s in specs)
    return replace(trace, jobs=specs, throughput=THROUGHPUT)


class CutCounter:
    """Wraps ``place``: rounds, and GPUs the search planned that placement did not give; and
    ``fill``: the GPUs it added to what placement gave."""

    def __init__(self) -> None:
        self.rounds = self.cut = self.filled = 0
        self.place, self.fill = pollux_module.place, pollux_module.fill

    def __call__(self, requests, capacity, interference=True):  # noqa: ANN001, ANN204
        nodes = self.place(requests, capacity, interference)
        self.rounds += 1
        self.cut += sum(r.count - len(n) for r, n in zip(requests, nodes, strict=True))
        return nodes

    def fill_counted(self, requests, capacity, placed, utility):  # noqa: ANN001, ANN201
        nodes = self.fill(requests, capacity, placed, utility)
        self.filled += sum(map(len, nodes)) - sum(map(len, placed))
        return nodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--elastic", type=int, default=8)
    parser.add_argument("--nodes", type=int, default=9)
    parser.add_argument("--resnet50", type=int, default=0)
    args = parser.parse_args()
    counter = CutCounter()
    pollux_module.place, pollux_module.fill = counter, counter.fill_counted
    sim = Simulator(cluster(args.nodes), workload(args.jobs, args.elastic, args.resnet50),
                    build_policy("pollux"), SimConfig())
    start = time.process_time()
    result = sim.run()
    cpu = time.process_time() - start
    summary = summarize(result)
    print(f"pollux {TRACE}[:{args.jobs}] elastic={args.elastic} resnet50={args.resnet50} "
          f"{sim.cluster.name} {THROUGHPUT}: "
          f"{summary.jobs_finished}/{summary.jobs_submitted} finished, "
          f"mean JCT {summary.jct_mean / 3600:.2f} h, makespan {summary.makespan / 3600:.2f} h, "
          f"CPU {cpu:.2f} s, "
          f"rounds {counter.rounds}, GPUs planned then cut {counter.cut}, "
          f"then filled {counter.filled}")


if __name__ == "__main__":
    main()
