"""The Philly trace with its virtual clusters (VCs) as tenant queues (issue 6): no quotas, strict
quotas, and quotas with borrowing + fair sharing; and the guarantee check against a private
cluster per VC.

Run on demand: ``python benchmarks/compare_tenants.py [--start 21] [--days 7] [--scale 4]
[--compress 2] [--policy fifo]`` (about 2-3 minutes on the shared 2-core machine).

The bundled VC sizes give the whole trace 13% utilization on the `philly` cluster (2,816 GPUs
in 11 VC pools; the trace names 15 VCs, 4 of them with 18 jobs and no machines, which
``examples/tenants/philly-vcs.yaml`` makes queues of nominal 0), so queues hardly form. To make
contention: a window of ``--days`` days from day ``--start`` (the first two weeks hold 22
jobs), every VC's quota and servers divided by ``--scale`` (4: 704 GPUs; every job still fits
its VC's quota), and arrivals ``--compress`` times closer (2: the busy VCs then ask for
more than their quota). Modes, on that cluster,
with the VC pool pins dropped:

- ``no-quotas``: the policy alone on one shared cluster;
- ``strict``: the tenant file without cohorts (a VC never borrows);
- ``borrow+fair``: the file as is (one cohort, reclaim ``any``, 10-minute minimum runtime, fair
  sharing with a one-day usage half-life);
- ``private``: each VC alone on a cluster of its (scaled) quota, with the policy alone.
FIFO runs with ``strict=false`` everywhere, as the tenant queues are BestEffortFIFO.

The guarantee (issue 6): a VC that stays within its nominal quota waits no longer under
``borrow+fair`` than in its private cluster. The table prints each VC's mean JCT and mean
waiting (queueing delay) per mode, and its GPU-seconds asked over the window's span relative to
its quota ("load"; long jobs run past the window, so it overstates the demand at any time).
"""

from __future__ import annotations

import argparse
import copy
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from statistics import fmean

import yaml

from dlsched.cluster.cluster import Cluster, Node
from dlsched.report.metrics import summarize
from dlsched.scheduling.registry import build_policy
from dlsched.sim.result import SimulationResult
from dlsched.sim.simulator import SimConfig, Simulator
from dlsched.tenancy.config import TenantConfig
from dlsched.tenancy.loader import parse_tenants
from dlsched.tenancy.profile import with_tenants
from dlsched.workload.readers.base import read_trace
from dlsched.workload.readers.philly import without_vc_pins
from dlsched.workload.trace import Trace

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared/data/traces/philly/philly.csv"
TENANTS = ROOT / "examples/tenants/philly-vcs.yaml"


def window(trace: Trace, start: float, days: float, compress: float) -> Trace:
    """Days ``start`` to ``start + days`` of the trace, rebased to 0, arrivals ``compress``
    times closer."""
    low, high = start * 86400, (start + days) * 86400
    jobs = tuple(replace(s, submit_time=(s.submit_time - low) / compress) for s in trace.jobs
                 if low <= s.submit_time < high)
    name = f"{trace.name}-d{start:g}+{days:g}/{compress:g}"
    return without_vc_pins(replace(trace, jobs=jobs, name=name))


def scaled(text: str, scale: float) -> dict:
    """The tenant file with every VC's nominal GPU quota divided by ``scale``."""
    doc = yaml.safe_load(text)
    for cq in doc["cluster_queues"]:
        cq["quotas"]["p100"]["gpu"] = int(cq["quotas"]["p100"]["gpu"] / scale)
    return doc


def vc_cluster(quotas: Mapping[str, float]) -> Cluster:
    """One pool of 8-GPU P100 servers per VC, as many as its quota (the `philly` cluster's
    shape, scaled with the quotas)."""
    return Cluster("philly-vcs", tuple(Node(f"{vc}-{i}", "P100", 8, pool=vc)
                                       for vc, gpus in quotas.items()
                                       for i in range(int(gpus) // 8)))


def strict(doc: dict) -> TenantConfig:
    """The tenant file without cohorts: no queue borrows or lends."""
    doc = copy.deepcopy(doc)
    doc.pop("cohorts", None)
    for cq in doc["cluster_queues"]:
        cq.pop("cohort", None)
        cq.get("preemption", {}).pop("reclaim_within_cohort", None)
    doc["fair_sharing"] = {"enabled": False}
    return parse_tenants(yaml.safe_dump(doc), f"{TENANTS} (strict)")


def simulate(cluster: Cluster, trace: Trace, policy: str,
             tenants: TenantConfig | None) -> SimulationResult:
    # The tenant queues are BestEffortFIFO: give FIFO the same non-blocking order everywhere.
    profile = build_policy(policy, {"strict": "false"} if policy == "fifo" else {})
    if tenants is not None:
        profile = with_tenants(profile, tenants)
    return Simulator(cluster, trace, profile, SimConfig()).run()


def per_vc(result: SimulationResult, value: str) -> dict[str, float]:
    groups: dict[str, list[float]] = {}
    for job in result.jobs:
        got = getattr(job, value)
        if got is not None:
            groups.setdefault(job.queue, []).append(got)
    return {vc: fmean(v) for vc, v in groups.items()}


def private(trace: Trace, vc: str, gpus: int, policy: str) -> SimulationResult:
    cluster = Cluster(f"private-{vc}", tuple(Node(f"{vc}-{i}", "P100", 8)
                                              for i in range(gpus // 8)))
    jobs = tuple(s for s in trace.jobs if s.queue == vc and s.num_gpus <= gpus)
    return simulate(cluster, replace(trace, jobs=jobs), policy, None)


def demand(trace: Trace, quotas: Mapping[str, float]) -> dict[str, float]:
    """Each VC's GPU-seconds asked over the window's span, relative to its quota."""
    span = max(s.submit_time for s in trace.jobs) - min(s.submit_time for s in trace.jobs)
    asked: dict[str, float] = {}
    for s in trace.jobs:
        asked[s.queue] = asked.get(s.queue, 0.0) + s.work * s.num_gpus
    return {vc: asked[vc] / span / q for vc, q in quotas.items() if q > 0 and vc in asked}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--start", type=float, default=21.0, help="first day kept")
    parser.add_argument("--days", type=float, default=7.0)
    parser.add_argument("--compress", type=float, default=2.0)
    parser.add_argument("--scale", type=float, default=4.0,
                        help="divide each VC's quota and servers by this")
    parser.add_argument("--policy", default="fifo")
    args = parser.parse_args()
    trace = window(read_trace(args.trace, "philly"), args.start, args.days,
                   args.compress)
    doc = scaled(TENANTS.read_text(), args.scale)
    borrow = parse_tenants(yaml.safe_dump(doc), f"{TENANTS} / {args.scale:g}")
    quotas = {name: cq.quotas[("p100", "gpu")].nominal
              for name, cq in borrow.cluster_queues.items()}
    cluster = vc_cluster(quotas)
    print(f"{trace.name}: {len(trace)} jobs, {len(quotas)} queues; the `philly` cluster's 11 "
          f"VC pools / {args.scale:g}: {cluster.num_gpus} GPUs; policy {args.policy}")
    waits, jcts = {}, {}
    for mode, tenants in (("no-quotas", None), ("strict", strict(doc)),
                          ("borrow+fair", borrow)):
        started = time.perf_counter()
        result = simulate(cluster, trace, args.policy, tenants)
        s = summarize(result)
        waits[mode], jcts[mode] = per_vc(result, "queueing_delay"), per_vc(result, "jct")
        print(f"{mode:>12}: mean JCT {s.jct_mean / 3600:7.2f} h, utilization "
              f"{(s.utilization or 0) * 100:5.1f}%, Jain (tenants) {s.jain_tenants or 0:.3f}, "
              f"{s.jobs_finished}/{s.jobs_submitted} finished, "
              f"{time.perf_counter() - started:.0f} s")
    load = demand(trace, quotas)
    print("\nper VC: demand/quota, mean JCT (h) and mean wait (h) per mode; private = alone on "
          "a cluster of its quota")
    print(f"{'VC':>7} {'quota':>5} {'load':>5} | {'JCT none':>8} {'strict':>7} {'borrow':>7} | "
          f"{'wait none':>9} {'strict':>7} {'borrow':>7} {'private':>7} guarantee")
    for vc in sorted(quotas, key=lambda v: -quotas[v]):
        if vc not in jcts["borrow+fair"]:
            continue
        alone = per_vc(private(trace, vc, int(quotas[vc]), args.policy),
                       "queueing_delay").get(vc) if quotas[vc] else None
        mine = waits["borrow+fair"].get(vc, 0.0)
        check = "-" if alone is None else ("ok" if mine <= alone + 1.0 else "WORSE")
        print(f"{vc:>7} {quotas[vc]:5.0f} {load.get(vc, 0):5.2f} | "
              + " ".join(f"{jcts[m].get(vc, float('nan')) / 3600:8.2f}" for m in jcts) + " | "
              + " ".join(f"{waits[m].get(vc, float('nan')) / 3600:8.2f}" for m in waits)
              + f" {(alone if alone is not None else float('nan')) / 3600:7.2f} {check}")


if __name__ == "__main__":
    main()
