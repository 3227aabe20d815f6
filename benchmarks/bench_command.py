"""Benchmark: the whole `dlsched simulate` command a user runs (issue 14), timed as a process.

Run on demand: ``python benchmarks/bench_command.py [--policies fifo,tiresias] [--cluster
philly] [--trace PATH] [--repeat 3] [--base DIR] [--pause 4]``. Each run is a fresh process in
a clean environment (``env -i`` with this interpreter's ``bin`` first on PATH and
``DLSCHED_DATA`` passed on), so start-up, the trace read, the simulation and every report count,
with bytecode caches as a user has them. Per policy it prints each run's wall and CPU (user +
system) seconds and their medians, and the sha256 of jobs.csv, timeline.csv and segments.csv.

This host's speed drifts by 10% and more within minutes, and the run after another is often the
slower: ``--base DIR`` (a source tree of another commit, e.g. ``git worktree add DIR REV``) runs
that tree's ``dlsched`` too, in the order base, this, this, base, ... with ``--pause`` seconds
between runs, and says whether the two trees' outputs are byte-identical. Compare medians
measured in one such run only.

Targets (issue 14): the whole Philly table on ``philly``, median of 3, ≤ 5 s for FIFO and ≤ 8 s
for Tiresias.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = ROOT.parent / "shared/data/traces/philly/philly.csv"
OUTPUTS = ("jobs.csv", "timeline.csv", "segments.csv")


def clean_env(tree: Path) -> dict[str, str]:
    """A user's fresh shell, with ``tree``'s package first on the path."""
    env = {"HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(tree),
           "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}
    if "DLSCHED_DATA" in os.environ:
        env["DLSCHED_DATA"] = os.environ["DLSCHED_DATA"]
    return env


def package_of(tree: Path, scratch: Path) -> str:
    """Where ``tree``'s processes import dlsched from (run from a folder without a package:
    ``python -m`` puts the working directory before PYTHONPATH)."""
    done = subprocess.run([sys.executable, "-c", "import dlsched; print(dlsched.__file__)"],
                          env=clean_env(tree), cwd=scratch, capture_output=True, text=True,
                          check=True)
    return str(Path(done.stdout.strip()).parent)


def run_once(tree: Path, policy: str, trace: str, cluster: str, out: Path) -> tuple[float, float]:
    """(wall, user + system CPU) seconds of one ``dlsched simulate`` process from ``tree``."""
    command = [sys.executable, "-m", "dlsched.cli", "simulate", "--trace", trace, "--cluster",
               cluster, "--policy", policy, "--out", str(out)]
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run(command, env=clean_env(tree), cwd=out.parent, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - started
    after = os.times()
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(command)} exited {done.returncode}:\n"
                         f"{done.stderr[-2000:]}")
    cpu = (after.children_user - before.children_user
           + after.children_system - before.children_system)
    return wall, cpu


def digests(out: Path) -> dict[str, str]:
    return {name: hashlib.sha256((out / name).read_bytes()).hexdigest()[:16]
            for name in OUTPUTS if (out / name).exists()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--policies", default="fifo,tiresias")
    parser.add_argument("--cluster", default="philly")
    parser.add_argument("--trace", default=str(DEFAULT_TRACE.resolve()))
    parser.add_argument("--repeat", type=int, default=3, help="runs per tree and policy")
    parser.add_argument("--base", type=Path, default=None,
                        help="another source tree to run alternately (outputs compared)")
    parser.add_argument("--pause", type=float, default=4.0, help="seconds between runs")
    args = parser.parse_args()
    trees = {"this": ROOT} if args.base is None else {"base": args.base.resolve(), "this": ROOT}
    order = list(trees) if len(trees) == 1 else ["base", "this", "this", "base"]
    with tempfile.TemporaryDirectory(prefix="bench-command-") as scratch:
        for name, tree in trees.items():
            print(f"{name}: dlsched from {package_of(tree, Path(scratch))}")
        for policy in args.policies.split(","):
            times: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
            outputs: dict[str, dict[str, str]] = {}
            print(f"{policy} (load before: {' '.join(f'{x:.2f}' for x in os.getloadavg())})",
                  flush=True)
            while min(len(runs) for runs in times.values()) < args.repeat:
                for name in order:
                    if len(times[name]) >= args.repeat:
                        continue
                    out = Path(scratch) / f"{policy}-{name}"
                    wall, cpu = run_once(trees[name], policy, args.trace, args.cluster, out)
                    times[name].append((wall, cpu))
                    outputs[name] = digests(out)
                    print(f"  {name:>4}: {wall:6.2f} s wall, {cpu:6.2f} s CPU", flush=True)
                    time.sleep(args.pause)
            for name, runs in times.items():
                walls, cpus = [w for w, _ in runs], [c for _, c in runs]
                print(f"  {name:>4} median: {statistics.median(walls):.2f} s wall, "
                      f"{statistics.median(cpus):.2f} s CPU; outputs {outputs[name]}")
            if len(trees) == 2:
                same = outputs["base"] == outputs["this"]
                print(f"  outputs {'identical' if same else 'DIFFER'} between the trees")


if __name__ == "__main__":
    main()
