"""Check a tenant run's invariants from its output files alone (issue 19).

Usage: ``python benchmarks/check_tenancy_invariants.py RUN_DIR`` (a folder written by
``dlsched simulate --tenants FILE --out RUN_DIR``). It reads ``tenant_quotas.csv``,
``segments.csv`` and ``evictions.csv`` with the standard library only (no dlsched import, so
it audits the scheduler rather than trusting its accounting), replays every run segment in
time order (at one time, ends before starts) and checks after each time step:

1. borrowing limits: no cluster queue uses more than nominal + borrowing limit of any
   (flavor, resource), nor a cohort more than its subtree quota + borrowing limit;
2. lending limits: at the root of each cohort tree, the usage that reaches it (each node passes
   up what it uses beyond its guaranteed quota, subtree - lending limit) stays within its
   subtree quota (what the nodes lend) (Kueue KEP-79 ``resource_node``);
3. no GPU is held beyond its capacity (shares summed) by overlapping segments;
4. no ping-pong: no two jobs evicted each other by the tenant layer's choice (``decided_by``
   ``tenants``, or no such column). A wrapped policy's own evictions inside a queue
   (``decided_by`` ``policy``) are not checked: Themis' lease auctions take GPUs back and
   forth by design.

Exit status 0 when all hold; otherwise 1, with the first violations printed.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

EPS = 1e-6


def _float(text: str) -> float | None:
    return float(text) if text not in ("", None) else None


class Tree:
    """The quota tree of ``tenant_quotas.csv``: subtree and guaranteed quotas per node."""

    def __init__(self, rows: list[dict[str, str]]) -> None:
        self.parent: dict[str, str | None] = {}
        self.quota: dict[str, dict[tuple[str, str], tuple[float, float | None, float | None]]]
        self.quota = defaultdict(dict)
        for row in rows:
            key = self.key(row["node"], row["kind"])
            parent = row["parent"]
            self.parent[key] = f"cohort:{parent}" if parent else None
            if row["flavor"]:
                self.quota[key][(row["flavor"], row["resource"])] = (
                    float(row["nominal"]), _float(row["borrowing_limit"]),
                    _float(row["lending_limit"]))
        self.children: dict[str, list[str]] = defaultdict(list)
        for key, parent in self.parent.items():
            if parent is not None:
                self.children[parent].append(key)
        self.subtree: dict[str, dict[tuple[str, str], float]] = {}
        self.guaranteed: dict[str, dict[tuple[str, str], float]] = {}
        for key in self.parent:
            self._fill(key)

    @staticmethod
    def key(name: str, kind: str) -> str:
        return name if kind == "cluster_queue" else f"cohort:{name}"

    def _fill(self, key: str) -> None:
        if key in self.subtree:
            return
        total = {fr: q[0] for fr, q in self.quota[key].items()}
        for child in self.children.get(key, ()):
            self._fill(child)
            for fr, value in self.subtree[child].items():
                total[fr] = total.get(fr, 0.0) + value - self.guaranteed[child].get(fr, 0.0)
        self.subtree[key] = total
        self.guaranteed[key] = {fr: max(0.0, total.get(fr, 0.0) - q[2])
                                for fr, q in self.quota[key].items() if q[2] is not None}

    def usage(self, queue_usage: dict[str, dict[tuple[str, str], float]]
              ) -> dict[str, dict[tuple[str, str], float]]:
        """Every node's usage: a queue's own; a cohort's, what its children use beyond their
        guaranteed quotas."""
        out: dict[str, dict[tuple[str, str], float]] = {}

        def walk(key: str) -> dict[tuple[str, str], float]:
            if key in out:
                return out[key]
            used = dict(queue_usage.get(key, {})) if not key.startswith("cohort:") else {}
            for child in self.children.get(key, ()):
                for fr, value in walk(child).items():
                    passed = max(0.0, value - self.guaranteed[child].get(fr, 0.0))
                    used[fr] = used.get(fr, 0.0) + passed
            out[key] = used
            return used

        for key in self.parent:
            walk(key)
        return out


def check(run: Path, limit: int = 20) -> list[str]:
    tree = Tree(_read(run / "tenant_quotas.csv"))
    segments = _read(run / "segments.csv")
    problems: list[str] = []
    problems += _check_quotas(tree, segments)
    problems += _check_gpus(segments)
    problems += _check_ping_pong(_read(run / "evictions.csv"))
    return problems[:limit] if limit else problems


def _events(segments: list[dict[str, str]]) -> list[tuple[float, int, dict[str, str]]]:
    events = []
    for row in segments:
        events.append((float(row["start"]), 1, row))
        if row["end"]:
            events.append((float(row["end"]), 0, row))
    events.sort(key=lambda e: (e[0], e[1]))
    return events


def _check_quotas(tree: Tree, segments: list[dict[str, str]]) -> list[str]:
    used: dict[str, dict[tuple[str, str], float]] = defaultdict(lambda: defaultdict(float))
    problems: list[str] = []
    events, index = _events(segments), 0
    while index < len(events):
        time = events[index][0]
        while index < len(events) and events[index][0] == time:
            _, kind, row = events[index]
            index += 1
            if not row["flavor"]:
                continue
            for resource in ("gpu", "cpu", "memory"):
                amount = _float(row[resource]) or 0.0
                used[row["cluster_queue"]][(row["flavor"], resource)] += (
                    amount if kind else -amount)
        problems += _check_time(tree, tree.usage(used), time)
    return problems


def _check_time(tree: Tree, usage: dict[str, dict[tuple[str, str], float]],
                time: float) -> list[str]:
    problems = []
    for key, frs in usage.items():
        for fr, value in frs.items():
            subtree = tree.subtree[key].get(fr, 0.0)
            limit = tree.quota[key].get(fr, (0.0, None, None))[1]
            if tree.parent[key] is None and value > subtree + EPS:
                problems.append(f"t={time:g}: {key} {fr} uses {value:g} > its pool {subtree:g} "
                                f"(lending limits)")
            elif limit is not None and value > subtree + limit + EPS:
                problems.append(f"t={time:g}: {key} {fr} uses {value:g} > {subtree:g} + "
                                f"borrowing limit {limit:g}")
    return problems


def _check_gpus(segments: list[dict[str, str]]) -> list[str]:
    held: dict[int, float] = defaultdict(float)
    problems = []
    for time, kind, row in _events(segments):
        share = float(row["gpu_share"] or 1.0)
        for gpu in (int(g) for g in row["gpu_ids"].split(";") if g):
            held[gpu] += share if kind else -share
            if held[gpu] > 1.0 + EPS:
                problems.append(f"t={time:g}: GPU {gpu} held {held[gpu]:g} times over "
                                f"({row['job_id']} started)")
    return problems


def _check_ping_pong(evictions: list[dict[str, str]]) -> list[str]:
    pairs = {(e["preemptor"], e["victim"]) for e in evictions
             if e.get("decided_by") != "policy"}
    return [f"{a} evicted {b} and {b} evicted {a}" for a, b in sorted(pairs)
            if (b, a) in pairs and a < b]


def _read(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        raise SystemExit(f"{path}: missing (run with --tenants to write it)")
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="a run's output folder")
    args = parser.parse_args(argv)
    problems = check(args.run)
    segments = len(_read(args.run / "segments.csv"))
    evictions = len(_read(args.run / "evictions.csv"))
    if problems:
        print(f"{args.run}: {len(problems)}+ violations", *problems, sep="\n  ")
        return 1
    print(f"{args.run}: {segments} segments, {evictions} evictions: borrowing limits, lending "
          f"limits, GPU capacity and no ping-pong all hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
