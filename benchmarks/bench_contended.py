"""Benchmark: the whole Philly trace under contention (issue 14), per policy.

Run on demand: ``python benchmarks/bench_contended.py [--policies tiresias,sjf]
[--jobs N] [--cluster philly-shared-512] [--tenants examples/tenants/philly-vcs.yaml]``.
Each policy runs in its own process (so peak RSS is that run's); per policy it prints wall and
CPU seconds of the simulation, jobs/s, cycles, mean JCT, preemptions, peak RSS and a digest of
the per-job records (equal digests: identical schedules). ``tiresias:promote_knob=2`` passes a
policy option. Target (issue 14): each ≤ 60 s, ≤ 90 s under ``--tenants``, on this 2-core
machine (quote the load: it is shared).

This host's speed drifts by a third within minutes (the same run took 72 s and 107 s seven
minutes apart), so compare two source trees run together: ``--base DIR`` (a ``git worktree
add DIR REV``) runs each policy in that tree and in this one at the same time, one process per
core, and says whether their schedules are identical. Quote the pair's ratio.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

DEFAULT_TRACE = Path(__file__).resolve().parents[2] / "shared/data/traces/philly/philly.csv"
POLICIES = "fifo,sjf,srtf,backfill,tiresias,tiresias:promote_knob=2,edf"


def run_one(spec: str, trace_path: str, jobs: int | None, cluster_name: str,
            tenants: str | None) -> None:
    from dlsched.cluster.builtin import resolve_cluster
    from dlsched.report.metrics import summarize
    from dlsched.scheduling.registry import build_policy
    from dlsched.sim.simulator import SimConfig, Simulator
    from dlsched.tenancy.loader import load_tenants
    from dlsched.tenancy.profile import with_tenants
    from dlsched.workload.readers.base import read_trace

    policy, _, option_text = spec.partition(":")
    options = dict(o.split("=", 1) for o in option_text.split(",") if o)
    trace = read_trace(trace_path)
    if jobs is not None:
        trace = dataclasses.replace(trace, jobs=trace.jobs[:jobs])
    profile = build_policy(policy, options)
    if tenants:
        profile = with_tenants(profile, load_tenants(Path(tenants)))
    started, cpu_started = time.perf_counter(), time.process_time()
    result = Simulator(resolve_cluster(cluster_name), trace, profile, SimConfig()).run()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    summary = summarize(result)
    digest = records_digest(result.jobs)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{spec:>24}: {wall:7.2f} s (CPU {cpu:7.2f} s) {len(trace) / wall:7.0f} jobs/s  "
          f"cycles {result.cycles}  mean JCT {summary.jct_mean / 3600:7.3f} h  "
          f"utilization {summary.utilization:.3f}  preemptions {summary.preemptions}  "
          f"peak RSS {rss:.0f} MiB  digest {digest}", flush=True)


def records_digest(records: Iterable[Any]) -> str:
    """sha256 of every record's repr and a newline, by job id, fed one record at a time: the
    same digest as of the joined text, without the text (at the whole table the joined reprs
    and their bytes took ~70 MiB more than the run, and set the peak RSS printed beside)."""
    digest = hashlib.sha256()
    for record in sorted(records, key=lambda r: r.job_id):
        digest.update(f"{record!r}\n".encode())
    return digest.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--policies", default=POLICIES)
    parser.add_argument("--trace", default=str(DEFAULT_TRACE))
    parser.add_argument("--jobs", type=int, default=None, help="only the first N jobs")
    parser.add_argument("--cluster", default="philly-shared-512")
    parser.add_argument("--tenants", default=None, help="a tenants YAML (queues and quotas)")
    parser.add_argument("--base", default=None,
                        help="another source tree, run beside this one (one per core)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        run_one(args.one, args.trace, args.jobs, args.cluster, args.tenants)
        return
    for spec in args.policies.split(";" if ";" in args.policies else ","):
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"(load before {spec}: {load})", flush=True)
        options = ["--one", spec, "--trace", args.trace, "--cluster", args.cluster]
        options += ["--jobs", str(args.jobs)] if args.jobs is not None else []
        options += ["--tenants", str(Path(args.tenants).resolve())] if args.tenants else []
        if args.base is None:
            subprocess.run([sys.executable, __file__, *options], check=False)
        else:
            side_by_side(Path(args.base).resolve(), options)


def side_by_side(base: Path, options: list[str]) -> None:
    """One policy in the base tree and in this one at the same time; each line labelled."""
    here = Path(__file__).resolve().parents[1]
    runs = {}
    for label, tree in (("base", base), ("this", here)):
        env = {**os.environ, "PYTHONPATH": str(tree)}
        runs[label] = subprocess.Popen(
            [sys.executable, str(tree / "benchmarks/bench_contended.py"), *options],
            stdout=subprocess.PIPE, text=True, env=env, cwd=tree)
    digests = {}
    for label, run in runs.items():
        out, _ = run.communicate()
        line = out.strip().splitlines()[-1] if out.strip() else "(no output)"
        print(f"  {label}: {line.strip()}", flush=True)
        digests[label] = line.rsplit("digest ", 1)[-1] if "digest " in line else None
    same = digests["base"] is not None and digests["base"] == digests["this"]
    print(f"  schedules {'identical' if same else 'DIFFER'} between the trees", flush=True)


if __name__ == "__main__":
    main()
