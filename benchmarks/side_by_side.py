"""Run a peer's own simulator and dlsched on the same input; print mean JCT, makespan and CPU
seconds for each, with the relative difference (issue 13).

Each peer runs from a checkout in its own virtualenv, outside this repository (old pins:
numpy<2, pandas<2, pymoo 0.4), e.g. /work/peers/venv-pollux with numpy 1.23.5, pandas 1.5.3,
scipy 1.9.3, pymoo 0.4.2.2 on Python 3.9. Nothing of a peer is copied into dlsched: a peer's
files are run where they are (the Tiresias artifact, written for Python 2.7, is run from a
patched temporary copy: ``sys.maxint`` -> ``sys.maxsize``, and an empty stand-in for its
optional ``cplex`` import, which the policies compared here never call).

    python benchmarks/side_by_side.py tiresias --checkout /work/peers/Tiresias \
        --python /work/peers/venv-pollux/bin/python [--policies fifo,tiresias,srtf] [--limit N]
    python benchmarks/side_by_side.py pollux --checkout /work/peers/adaptdl \
        --python /work/peers/venv-pollux/bin/python --workloads 1,6 --policies tiresias,optimus \
        [--load 1.0]
    python benchmarks/side_by_side.py gavel --checkout /work/peers/gavel \
        --python /work/peers/venv-gavel/bin/python --jobs 100,300,1000 \
        [--pairs gavel-maxmin=max_min_fairness_perf,...] [--trace FILE] [--cache FILE]

Gavel (stanford-futuredata/gavel, ``scheduler/``) needs numpy<2, cvxpy<1.6 (ECOS), scipy,
scikit-learn, matrix_completion, psutil, grpcio and its RPC stubs (``make rpc_stubs`` in
``scheduler/``): its simulator imports them although a simulation never calls the RPCs. It
runs ``scripts/drivers/simulate_scheduler_with_trace.py -c 36:36:36 --seed 0`` on the first N
jobs of the bundled ``gavel-continuous-1000`` (written by Gavel's own generator).

dlsched runs each policy in the matching named setting (``dlsched/reproduce/settings``).
CPU seconds: the peer's child process (user + system) and dlsched's own process time; in
gavel mode both sides are whole processes (``dlsched simulate`` with the setting's options,
start-up and reports included), with CPU seconds per simulated job and their ratio; beside
them the simulation alone, in-process, imports excluded on both sides: Gavel's driver
``main()`` (trace parsing, policy, ``Scheduler.simulate``, its summary), timed by a small
wrapper that runs the driver file unchanged (``runpy``), and dlsched's trace loading, policy
building and ``Simulator.run`` (``DLSCHED_DRIVER``, after an untimed 2-job run that imports
what a run imports lazily; reports not written). Both sides' children run with bytecode
caches (``PYTHONDONTWRITEBYTECODE`` dropped), as a pip-installed package has them.
``--trace`` takes another Gavel-generator file (its first N jobs per count; e.g. 3,000 jobs
from ``scripts/utils/generate_trace.py --num_jobs 3000 --lam 120 --seed 0``, whose first
1,000 are the bundled file); ``--cache`` keeps Gavel's results in a JSON file (keyed by the
sha256 of the N-job input, the policy and the solver) so that a rerun only runs dlsched.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dlsched.cluster.builtin import resolve_cluster
from dlsched.experiment import load_trace, run_policy
from dlsched.reproduce.experiments.pollux_osdi21 import trace_name
from dlsched.reproduce.settings import load_setting
from dlsched.workload.bundled import BUNDLED_TRACES, resolve_trace

GAVEL_PAIRS = ("gavel-fifo=fifo_perf,gavel-maxmin=max_min_fairness_perf,"
               "gavel-maxmin-agnostic=max_min_fairness,gavel-ftf=finish_time_fairness_perf,"
               "gavel-maxmin=max_min_fairness_water_filling_perf,"
               "gavel-maxmin-agnostic=max_min_fairness_water_filling,"
               "gavel-las=max_min_fairness_perf")
TIRESIAS_SCHEDULES = {"fifo": "fifo", "tiresias": "dlas-gpu", "srtf": "shortest"}


@dataclass(frozen=True)
class Side:
    jct_mean: float
    makespan: float
    cpu_seconds: float
    sim_cpu_seconds: float = 0.0  # the simulation alone, in-process (gavel mode)


def child_env() -> dict[str, str]:
    """The environment without ``PYTHONDONTWRITEBYTECODE``: a child compiles each module once,
    not at every start (a pip install writes the caches too)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def child_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_dlsched(setting: str, policy: str, trace: str, limit: int | None = None) -> Side:
    started = time.process_time()
    with tempfile.TemporaryDirectory() as out:
        config = load_setting(setting).config(policy, trace=trace, out=out, limit=limit)
        cluster = resolve_cluster(config.cluster)
        summary = run_policy(config, policy, load_trace(config, cluster), cluster,
                             Path(out)).summary
    return Side(summary.jct_mean or 0.0, summary.makespan or 0.0,
                time.process_time() - started)


def tiresias_input(path: Path, limit: int | None) -> None:
    """The bundled ``philly-tiresias-2000`` in the Tiresias artifact's job format."""
    jobs = resolve_trace("philly-tiresias-2000").jobs[:limit]
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["job_id", "num_gpu", "submit_time", "iterations", "model_name",
                         "duration", "interval"])
        for index, spec in enumerate(jobs):
            following = jobs[index + 1].submit_time if index + 1 < len(jobs) else spec.submit_time
            writer.writerow([index, spec.num_gpus, int(spec.submit_time), int(spec.work),
                             "resnet50", int(spec.work), int(following - spec.submit_time)])


def patched_tiresias(checkout: Path, into: Path) -> Path:
    simulator = into / "simulator"
    shutil.copytree(checkout / "simulator", simulator)
    for source in simulator.glob("*.py"):
        source.write_text(source.read_text().replace("sys.maxint", "sys.maxsize"))
    stub = simulator / "cplex"
    stub.mkdir()
    (stub / "__init__.py").write_text("")
    (stub / "exceptions.py").write_text("class CplexError(Exception):\n    pass\n")
    (stub / "six").mkdir()
    (stub / "six" / "__init__.py").write_text("")
    (stub / "six" / "moves.py").write_text("range = range\n")
    return simulator


def run_tiresias_peer(python: str, simulator: Path, jobs: Path, schedule: str) -> Side:
    log = simulator / f"log-{schedule}"
    before = child_cpu()
    subprocess.run([python, "run_sim.py", "--cluster_spec=n32g4.csv", "--scheme=count",
                    f"--trace_file={jobs}", f"--schedule={schedule}", f"--log_path={log}"],
                   cwd=simulator, check=True, stdout=subprocess.DEVNULL)
    with (log / "job.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    jcts = [float(r["JCT"]) for r in rows]
    makespan = max(float(r["end_time"]) for r in rows)
    return Side(statistics.mean(jcts), makespan, child_cpu() - before)


POLLUX_DRIVER = """
import contextlib, io, json, sys
sys.path.insert(0, '.')
import argparse, pandas
import simulator
args = argparse.Namespace(workload=sys.argv[1], policy=sys.argv[2], min_nodes=16,
                          max_nodes=None, interval=60, interference=0.0, num_gpus=4,
                          low_util=None, high_util=None, output=None)
with contextlib.redirect_stdout(io.StringIO()):
    _, jcts = simulator.simulate(args)
json.dump(jcts, sys.stdout)
"""


def run_pollux_peer(python: str, checkout: Path, workload: Path, policy: str) -> Side:
    before = child_cpu()
    done = subprocess.run([python, "-W", "ignore", "-c", POLLUX_DRIVER, str(workload), policy],
                          cwd=checkout / "simulator", check=True, capture_output=True, text=True)
    jcts = json.loads(done.stdout)
    with workload.open() as handle:
        submits = {r["name"]: float(r["time"]) for r in csv.DictReader(handle)}
    makespan = max(submits[name] + jct for name, jct in jcts.items())
    return Side(statistics.mean(jcts.values()), makespan, child_cpu() - before)


GAVEL_DRIVER = """
import argparse, os, runpy, sys, time
sys.path.insert(0, os.getcwd())
driver = runpy.run_path('scripts/drivers/simulate_scheduler_with_trace.py', run_name='driver')
args = argparse.Namespace(
    trace_file=sys.argv[1], policy=sys.argv[2], solver=sys.argv[3], seed=0,
    cluster_spec='36:36:36', throughputs_file='simulation_throughputs.json',
    num_gpus_per_server='1:1:1', debug=False, checkpoint_threshold=None, checkpoint_file=None,
    time_per_iteration=360, window_start=None, window_end=None)
started = time.process_time()
driver['main'](args)
print(f'Simulation CPU seconds: {time.process_time() - started}', flush=True)
"""


def run_gavel_peer(python: str, checkout: Path, trace: Path, policy: str,
                   solver: str = "ECOS") -> Side:
    """Gavel's ``simulate_scheduler_with_trace.py`` with its command-line defaults and ``-c
    36:36:36 --seed 0``, run unchanged from its file by ``GAVEL_DRIVER`` (which also times
    its ``main()``: the simulation without the imports)."""
    before = child_cpu()
    done = subprocess.run([python, "-W", "ignore", "-c", GAVEL_DRIVER, str(trace), policy,
                           solver],
                          cwd=checkout / "scheduler", check=True, capture_output=True, text=True,
                          env=child_env())
    patterns = (("jct", r"^Average job completion time: ([0-9.]+) seconds"),
                ("span", r"^Total duration: ([0-9.]+) seconds"),
                ("sim", r"^Simulation CPU seconds: ([0-9.]+)"))
    found = {key: float(m.group(1)) for key, pattern in patterns
             if (m := re.search(pattern, done.stdout, re.M))}
    if len(found) < 3:
        raise RuntimeError(f"Gavel {policy}: no mean JCT or total duration in its output")
    return Side(found["jct"], found["span"], child_cpu() - before, found["sim"])


def cached_gavel_peer(cache: Path | None, python: str, checkout: Path, trace: Path,
                      policy: str, solver: str) -> Side:
    """``run_gavel_peer``, or its result kept in ``cache`` for the same trace text, policy
    and solver."""
    key = f"{hashlib.sha256(trace.read_bytes()).hexdigest()}/{policy}/{solver}"
    kept = json.loads(cache.read_text()) if cache is not None and cache.exists() else {}
    if key in kept:
        return Side(**kept[key])
    side = run_gavel_peer(python, checkout, trace, policy, solver)
    if cache is not None:
        kept = json.loads(cache.read_text()) if cache.exists() else {}
        kept[key] = side.__dict__
        cache.write_text(json.dumps(kept, indent=1, sort_keys=True))
    return side


DLSCHED_DRIVER = """
import dataclasses, json, sys, time
from dlsched.cluster.builtin import resolve_cluster
from dlsched.experiment import build_profile, failure_options, load_trace
from dlsched.reproduce.settings import load_setting
from dlsched.sim.simulator import SimConfig, Simulator

policy, trace, limit, fmt = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] or None


def simulate(jobs):
    config = load_setting('gavel-osdi20').config(policy, trace=trace, out='-', limit=jobs)
    config = dataclasses.replace(config, format=fmt)
    cluster = resolve_cluster(config.cluster)
    profile = build_profile(config, policy)
    sim = SimConfig(restart_overhead=config.restart_overhead,
                    round_seconds=config.round_seconds, seed=config.seed,
                    start_overhead=config.start_overhead, rounds_only=config.rounds_only,
                    **failure_options(config))
    return Simulator(cluster, load_trace(config, cluster), profile, sim).run()


simulate(2)  # untimed: imports what a run imports lazily (policies, readers, the LP solver)
started = time.process_time()
result = simulate(limit)
print(json.dumps({'cpu': time.process_time() - started, 'jobs': len(result.jobs)}))
"""


def run_dlsched_command(setting: str, policy: str, trace: str, limit: int,
                        fmt: str | None = None) -> Side:
    """dlsched as a user runs it: the whole ``dlsched simulate`` process (start-up, trace,
    simulation, reports), with the setting's options spelled out as flags; then the
    simulation alone in-process (``DLSCHED_DRIVER``, gavel-osdi20 only)."""
    config = load_setting(setting).config(policy, trace=trace, out="-", limit=limit)
    flags = ["--cluster", config.cluster, "--restart-overhead", str(config.restart_overhead),
             "--round-seconds", str(config.round_seconds)]
    flags += ["--rounds-only"] if config.rounds_only else []
    flags += ["--format", fmt] if fmt else []
    for key, value in config.policy_options:
        flags += ["--policy-opt", f"{key}={value}"]
    before = child_cpu()
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([sys.executable, "-c", "from dlsched.cli import app; app()", "simulate",
                        "--trace", trace, "--limit", str(limit), "--policy", policy, *flags,
                        "--out", out], check=True, stdout=subprocess.DEVNULL, env=child_env())
        summary = json.loads((Path(out) / "summary.json").read_text())
    whole = child_cpu() - before
    sim = 0.0
    if setting == "gavel-osdi20":
        done = subprocess.run([sys.executable, "-c", DLSCHED_DRIVER, policy, trace, str(limit),
                               fmt or ""], check=True, capture_output=True, text=True,
                              env=child_env())
        measured = json.loads(done.stdout.splitlines()[-1])
        if measured["jobs"] != limit:
            raise RuntimeError(f"dlsched {policy}: {measured['jobs']} jobs, not {limit}")
        sim = measured["cpu"]
    return Side(summary["jct_mean"], summary["makespan"], whole, sim)


def line(case: str, policy: str, peer: Side, ours: Side) -> str:
    diff = ours.jct_mean / peer.jct_mean - 1
    span = ours.makespan / peer.makespan - 1
    return (f"{case:>22} {policy:>9} {peer.jct_mean:>10.1f} {ours.jct_mean:>10.1f} {diff:>+7.1%}"
            f" {peer.makespan:>10.0f} {ours.makespan:>10.0f} {span:>+7.1%}"
            f" {peer.cpu_seconds:>8.1f} {ours.cpu_seconds:>8.2f}")


HEADER = (f"{'case':>22} {'policy':>9} {'peer JCT':>10} {'dlsched':>10} {'diff':>7}"
          f" {'peer span':>10} {'dlsched':>10} {'diff':>7} {'peer CPU':>8} {'ours CPU':>8}")


def tiresias(args: argparse.Namespace) -> None:
    print(HEADER)
    with tempfile.TemporaryDirectory() as scratch:
        simulator = patched_tiresias(Path(args.checkout), Path(scratch))
        jobs = Path(scratch) / "jobs.csv"
        tiresias_input(jobs, args.limit)
        for policy in args.policies.split(","):
            peer = run_tiresias_peer(args.python, simulator, jobs, TIRESIAS_SCHEDULES[policy])
            ours = run_dlsched("tiresias-nsdi19", policy, "philly-tiresias-2000", args.limit)
            print(line(f"philly-tiresias-{args.limit or 2000}", policy, peer, ours), flush=True)


def pollux(args: argparse.Namespace) -> None:
    print(HEADER)
    folder = "workloads" if args.load == "1.0" else f"workloads-{args.load}"
    for number in args.workloads.split(","):
        workload = Path(args.checkout) / "simulator" / folder / f"workload-{number}.csv"
        for policy in args.policies.split(","):
            peer = run_pollux_peer(args.python, Path(args.checkout), workload, policy)
            ours = run_dlsched("pollux-osdi21", policy,
                               trace_name(f"workload-{number}", args.load))
            print(line(f"workload-{number}@{args.load}", policy, peer, ours), flush=True)


def gavel(args: argparse.Namespace) -> None:
    print(HEADER + f" {'peer s/job':>9} {'ours s/job':>9} {'ratio':>7}"
          f" {'peer sim':>8} {'ours sim':>8} {'ratio':>7}")
    bundled = args.trace is None
    source = (BUNDLED_TRACES["gavel-continuous-1000"].file() if bundled
              else Path(args.trace)).read_text().splitlines(keepends=True)
    pairs = [pair.split("=", 1) for pair in args.pairs.split(",")]
    cache = Path(args.cache) if args.cache else None
    with tempfile.TemporaryDirectory() as scratch:
        for count in (int(n) for n in args.jobs.split(",")):
            if count > len(source):
                raise SystemExit(f"--jobs {count}: the trace has {len(source)} jobs")
            trace = Path(scratch) / f"gavel-{count}.trace"
            trace.write_text("".join(source[:count]))
            for ours_policy, peer_policy in pairs:
                solver = "SCS" if peer_policy in args.scs.split(",") else "ECOS"
                peer = cached_gavel_peer(cache, args.python, Path(args.checkout), trace,
                                         peer_policy, solver)
                ours = (run_dlsched_command("gavel-osdi20", ours_policy,
                                            "gavel-continuous-1000", count) if bundled
                        else run_dlsched_command("gavel-osdi20", ours_policy, str(trace), count,
                                                 "gavel"))
                print(line(f"gavel-{count}/{peer_policy}", ours_policy, peer, ours)
                      + f" {peer.cpu_seconds / count:>9.4f} {ours.cpu_seconds / count:>9.4f}"
                        f" {peer.cpu_seconds / ours.cpu_seconds:>6.1f}x"
                        f" {peer.sim_cpu_seconds:>8.2f} {ours.sim_cpu_seconds:>8.3f}"
                        f" {peer.sim_cpu_seconds / ours.sim_cpu_seconds:>6.1f}x", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    peers = parser.add_subparsers(dest="peer", required=True)
    t = peers.add_parser("tiresias")
    t.add_argument("--checkout", required=True)
    t.add_argument("--python", required=True)
    t.add_argument("--policies", default="fifo,tiresias,srtf")
    t.add_argument("--limit", type=int, default=None)
    p = peers.add_parser("pollux")
    p.add_argument("--checkout", required=True)
    p.add_argument("--python", required=True)
    p.add_argument("--workloads", default="6")
    p.add_argument("--policies", default="tiresias,optimus")
    p.add_argument("--load", default="1.0", choices=("0.5", "1.0", "1.5", "2.0"))
    g = peers.add_parser("gavel")
    g.add_argument("--checkout", required=True)
    g.add_argument("--python", required=True)
    g.add_argument("--jobs", default="100,300,1000")
    g.add_argument("--pairs", default=GAVEL_PAIRS,
                   help="dlsched policy=Gavel policy, comma-separated")
    g.add_argument("--scs", default="finish_time_fairness_perf",
                   help="Gavel policies run with --solver SCS (ECOS fails on FTF at 300 and "
                        "1,000 jobs)")
    g.add_argument("--trace", default=None,
                   help="a Gavel-generator trace file (default: the bundled "
                        "gavel-continuous-1000)")
    g.add_argument("--cache", default=None,
                   help="JSON file keeping Gavel's results between runs")
    args = parser.parse_args()
    {"tiresias": tiresias, "pollux": pollux, "gavel": gavel}[args.peer](args)


if __name__ == "__main__":
    main()
