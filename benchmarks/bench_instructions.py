"""Instructions, not seconds: ``bench_contended.py`` of two source trees under Valgrind.

This 2-core host drifts by 10-40% within an hour (the same code timed 96.8 s and 135.4 s on
the whole contended table under tenants), so a speed change of a few percent cannot be told
from wall or CPU time alone. Valgrind's instruction count (cachegrind's ``I refs`` with the
cache simulation off) is the same on every run of the same code and input, whatever else the
host does; two trees can be counted side by side, one per core.

Run on demand (needs ``valgrind``; about 50 times slower than a plain run):
``python benchmarks/bench_instructions.py --base /tmp/base --policies tiresias,backfill
--jobs 3000 --tenants examples/tenants/philly-vcs.yaml``. ``--base`` is another checkout (a
``git worktree add``); this tree is the other. Per tree and policy it prints the digest of
the schedule (equal digests: identical schedules), the instructions of the whole process, and
those of the simulation: less those of the same command with ``--jobs 10`` (start-up, imports,
trace read: about 4.7 G here). Quote ratios of the simulation counts.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
DEFAULT_TRACE = HERE.parent / "shared/data/traces/philly/philly.csv"
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")
_DIGEST = re.compile(r"digest ([0-9a-f]{16})")


def count(tree: Path, policy: str, jobs: int, trace: Path, tenants: str | None
          ) -> tuple[str, int]:
    """(digest, instructions of every process) of one ``bench_contended.py`` run of ``tree``."""
    command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--trace-children=yes",
               "--cachegrind-out-file=/dev/null", sys.executable,
               str(tree / "benchmarks/bench_contended.py"), "--policies", policy,
               "--jobs", str(jobs), "--trace", str(trace)]
    if tenants:
        command += ["--tenants", str(Path(tenants).resolve())]
    # Repeatable counts: one hash seed (set and dict orders) and no idle BLAS/OpenMP thread
    # pools (their spinning is counted too: one tree read 17.04 G, then 18.60 G, without).
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0",
           "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True,
                          check=True)
    found = _DIGEST.search(done.stdout)
    refs = sum(int(n.replace(",", "")) for n in _REFS.findall(done.stderr))
    return (found.group(1) if found else "?"), refs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True, help="the other source tree")
    parser.add_argument("--policies", default="tiresias")
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--trace", type=Path, default=DEFAULT_TRACE)
    parser.add_argument("--tenants", default=None)
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("bench_instructions needs valgrind (apt-get install -y valgrind)")
    trees = {"base": args.base.resolve(), "this": HERE}
    for policy in args.policies.split(","):
        runs = [(name, tree, jobs) for name, tree in trees.items()
                for jobs in (10, args.jobs)]
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(count, tree, policy, jobs, args.trace, args.tenants)
                       for _, tree, jobs in runs]
            found = {(name, jobs): future.result()
                     for (name, _, jobs), future in zip(runs, futures, strict=True)}
        simulated = {}
        for name in trees:
            digest, whole = found[(name, args.jobs)]
            simulated[name] = whole - found[(name, 10)][1]
            print(f"{policy:>24} {name:>4}: digest {digest}  instructions {whole:,} "
                  f"(simulation {simulated[name]:,})", flush=True)
        if simulated["base"]:
            print(f"{policy:>24} this/base simulation instructions: "
                  f"{simulated['this'] / simulated['base']:.3f}", flush=True)


if __name__ == "__main__":
    main()
