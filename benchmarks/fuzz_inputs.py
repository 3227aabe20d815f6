"""Fuzz every trace reader and YAML loader at length (issue 11 item 17, issue 12 items 4-5).

Mutates the seeds of ``tests/fuzzing/fuzz_seeds.py`` (one small valid file per trace format and
YAML loader) with the mutators of ``fuzz_mutators.py``, those the CI test uses, and loads each
file in a worker process under a per-input timeout and a memory cap. Counts tracebacks, hangs
(past the timeout), garbage accepted (a mutation that must fail loaded fine: the "exit 0 on
garbage" of the CLI), valid input refused or read differently (BOM, CRLF, quoting), and errors
that do not name file and line (and those that also name a field).

``--via loaders`` (default) calls the loaders the CLI calls, in-process; ``--via cli`` runs
``dlsched simulate`` itself (typer's runner, in the worker) on trace and cluster files and
judges its exit code and its printed error.

    python benchmarks/fuzz_inputs.py --traces 10000 --yaml 2000 --out fuzz.json
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import resource
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path
from random import Random
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "fuzzing"), str(ROOT)]

from fuzz_mutators import MUTATORS, mutators_for  # noqa: E402
from fuzz_runner import Outcome, file_name, located, mutate_and_judge  # noqa: E402
from fuzz_seeds import TARGETS, TRACES, YAMLS, Target  # noqa: E402

MEMORY_CAP = 3 << 30  # bytes of address space per worker: a blow-up becomes a MemoryError


def plan(traces: int, yamls: int, seed: int) -> list[tuple[str, str, str]]:
    """(target, mutator, rng seed) for every input, round-robin over targets."""
    tasks = []
    for count, targets in ((traces, TRACES), (yamls, YAMLS)):
        for i in range(count):
            target = targets[i % len(targets)]
            key = f"{seed}-{target.name}-{i}"
            tasks.append((target.name, Random(key).choice(mutators_for(target)).name, key))
    return tasks


def cli_outcome(target: Target, mutator_name: str, key: str, folder: Path) -> Outcome:
    """Run ``dlsched simulate`` on the mutated file; exit 0 = loaded, 2 + message = error."""
    from typer.testing import CliRunner

    from dlsched.cli import app

    mutator = next(m for m in MUTATORS if m.name == mutator_name)
    path = folder / file_name(target)
    path.write_bytes(mutator.apply(target.seed.encode(), target, Random(key)))
    if target.kind == "trace":
        args = ["--trace", str(path), "--cluster", "philly"]
        args += [] if Random(key).random() < 0.3 else ["--format", target.name]
    else:
        trace = folder / "seed.csv"
        trace.write_text(TARGETS["itp"].seed)
        args = ["--trace", str(trace), "--cluster", str(path)]
    result = CliRunner().invoke(app, ["simulate", *args, "--policy", "fifo",
                                      "--out", str(folder / "out")])
    problems: list[str] = []
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        status, message = "traceback", f"{type(exc).__name__}: {str(exc)[:300]}"
        problems.append("traceback")
    elif result.exit_code == 0:
        status, message = "ok", ""
        if mutator.expect == "error":
            problems.append("garbage accepted")
    else:
        status = "error"
        message = " ".join(result.output.split("error:", 1)[-1].split())
        if mutator.expect == "same":
            problems.append("valid input refused")
    field = False
    if status == "error":
        named, field = located(message, path)
        if not named:
            problems.append("error without file and line")
    return Outcome(target.name, mutator.name, status, message, field, tuple(problems))


def worker(conn: Connection, via: str) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    folder = Path(tempfile.mkdtemp(prefix="fuzz-"))
    mutators = {m.name: m for m in MUTATORS}
    while True:
        task = conn.recv()
        if task is None:
            return
        name, mutator, key = task
        start = time.process_time()
        try:
            if via == "cli":
                outcome = cli_outcome(TARGETS[name], mutator, key, folder)
            else:
                outcome = mutate_and_judge(TARGETS[name], mutators[mutator], Random(key),
                                           folder)
        except MemoryError:
            outcome = Outcome(name, mutator, "traceback", "MemoryError", False, ("traceback",))
        conn.send((outcome, time.process_time() - start))


class Pool:
    """Workers fed one input at a time; a worker past the timeout is killed (a hang)."""

    def __init__(self, size: int, via: str) -> None:
        self.via = via
        self.workers = [self._start() for _ in range(size)]

    def _start(self) -> tuple[mp.Process, Connection]:
        parent, child = mp.Pipe()
        process = mp.Process(target=worker, args=(child, self.via), daemon=True)
        process.start()
        return process, parent

    def run(self, tasks: list[tuple[str, str, str]], timeout: float) -> list[dict[str, Any]]:
        results: list[dict[str, Any]] = []
        pending = list(reversed(tasks))
        busy: dict[int, tuple[tuple[str, str, str], float]] = {}
        while pending or busy:
            for i, (_, conn) in enumerate(self.workers):
                if i not in busy and pending:
                    task = pending.pop()
                    conn.send(task)
                    busy[i] = (task, time.monotonic())
            for i in list(busy):
                results += self._collect(i, busy, timeout)
            time.sleep(0.001)
        for process, conn in self.workers:
            conn.send(None)
            process.join(5)
        return results

    def _collect(self, i: int, busy: dict, timeout: float) -> list[dict[str, Any]]:
        process, conn = self.workers[i]
        task, started = busy[i]
        if conn.poll():
            try:
                outcome, cpu = conn.recv()
            except EOFError:  # the worker died (killed for memory?)
                outcome, cpu = Outcome(task[0], task[1], "crash", "worker died", False,
                                       ("traceback",)), 0.0
                self.workers[i] = self._start()
            del busy[i]
            return [{**outcome.__dict__, "cpu": cpu, "key": task[2]}]
        alive = process.is_alive()
        if not alive or time.monotonic() - started > timeout:
            process.kill()
            process.join()
            self.workers[i] = self._start()
            del busy[i]
            status = "hang" if alive else "crash"
            return [{"target": task[0], "mutator": task[1], "status": status, "message": "",
                     "field_named": False, "problems": [status], "cpu": timeout,
                     "key": task[2]}]
        return []


def summarize(results: list[dict[str, Any]], kind: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for family in ("trace", "yaml"):
        rows = [r for r in results if kind[r["target"]] == family]
        problems = collections.Counter(p for r in rows for p in r["problems"])
        errors = [r for r in rows if r["status"] == "error"]
        garbage = [r for r in rows
                   if next(m for m in MUTATORS if m.name == r["mutator"]).expect == "error"]
        examples: dict[str, list[str]] = {}
        for r in rows:
            for p in r["problems"]:
                examples.setdefault(p, [])
                if len(examples[p]) < 5:
                    examples[p].append(f"{r['target']}/{r['mutator']} ({r['key']}): "
                                       f"{r['message'][:200]}")
        out[family] = {
            "inputs": len(rows), "loaded": sum(r["status"] == "ok" for r in rows),
            "errors": len(errors), "garbage_inputs": len(garbage),
            "tracebacks": problems["traceback"], "hangs": problems["hang"],
            "crashes": problems["crash"], "garbage_accepted": problems["garbage accepted"],
            "valid_refused": problems["valid input refused"],
            "meaning_changed": problems["meaning changed"],
            "errors_without_file_and_line": problems["error without file and line"],
            "errors_naming_a_field": sum(r["field_named"] for r in errors),
            "max_cpu_seconds": round(max((r["cpu"] for r in rows), default=0.0), 3),
            "mean_cpu_seconds": round(sum(r["cpu"] for r in rows) / max(len(rows), 1), 4),
            "by_mutator": dict(collections.Counter(r["mutator"] for r in rows)),
            "errors_without_a_field_by_mutator": dict(collections.Counter(
                r["mutator"] for r in errors if not r["field_named"]).most_common()),
            "errors_without_a_field_examples": [
                f"{r['target']}/{r['mutator']}: {r['message'][:160]}"
                for r in errors if not r["field_named"]][:: max(1, len(errors) // 40)][:40],
            "examples": examples,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--yaml", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per input (wall)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--via", choices=("loaders", "cli"), default="loaders")
    parser.add_argument("--out", type=Path, default=None, help="write the summary as JSON")
    args = parser.parse_args()
    yamls = 0 if args.via == "cli" else args.yaml
    tasks = plan(args.traces, yamls, args.seed)
    if args.via == "cli":  # the CLI reads cluster files too: a share of the YAML inputs
        tasks += [t for t in plan(0, args.yaml, args.seed) if t[0] == "cluster"]
    start = time.monotonic()
    results = Pool(args.workers, args.via).run(tasks, args.timeout)
    kind = {t.name: t.kind for t in TARGETS.values()}
    summary = {"via": args.via, "seed": args.seed, "timeout_s": args.timeout,
               "wall_seconds": round(time.monotonic() - start, 1),
               **summarize(results, kind)}
    text = json.dumps(summary, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n")
    for family in ("trace", "yaml"):
        s = summary[family]
        print(f"{family}: {s['inputs']} inputs ({s['garbage_inputs']} garbage), "
              f"{s['loaded']} loaded, {s['errors']} errors; tracebacks {s['tracebacks']}, "
              f"hangs {s['hangs']}, crashes {s['crashes']}, garbage accepted "
              f"{s['garbage_accepted']}, valid refused {s['valid_refused']}, meaning changed "
              f"{s['meaning_changed']}, errors without file:line "
              f"{s['errors_without_file_and_line']}, errors naming a field "
              f"{s['errors_naming_a_field']}/{s['errors']}; CPU per input max "
              f"{s['max_cpu_seconds']} s")
    print(f"wall {summary['wall_seconds']} s")


if __name__ == "__main__":
    main()
