"""Slurm's multifactor fair-share factor over an account hierarchy, two algorithms:

- classic (slurm.schedmd.com/classic_fair_share.html, ``PriorityFlags=NO_FAIR_TREE``):
  normalized shares S = the product, down the path, of each node's shares over its siblings';
  effective usage U_E = the node's normalized usage for accounts just below the root, else
  U_A + (U_E(parent) - U_A) * S_child / S_all_siblings; the factor F = 2^(-U_E / S);
- Fair Tree (slurm.schedmd.com/fair_tree.html, Slurm's default since 19.05): per node the
  Level Fairshare LF = (shares / siblings' shares) / (usage / siblings' usage) (infinite
  without usage); the tree is visited depth first, children by LF descending, and users are
  ranked in that order: F = rank / number of users, 1.0 for the first. Tied users share a
  rank; tied accounts have their children merged before descending.

In the tenant model the accounts are the cohorts and the users the cluster queues; shares are
their ``weight``; usage is each queue's decayed GPU usage (``fairshare.DecayedUsage``, Slurm's
PriorityDecayHalfLife). Several cohort trees (and queues in no cohort) hang from one implicit
root, as Slurm's accounts hang from ``root``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Hierarchy:
    """``parent`` of every account and user (None: below the root), ``shares`` (raw)."""

    parent: Mapping[str, str | None]
    shares: Mapping[str, float]
    users: frozenset[str]
    children: dict[str | None, list[str]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        for node, parent in self.parent.items():
            self.children.setdefault(parent, []).append(node)

    def raw_usage(self, usage: Mapping[str, float]) -> dict[str, float]:
        """Each node's usage: a user's own, an account's summed over its subtree."""
        out: dict[str, float] = {}

        def walk(node: str) -> float:
            total = usage.get(node, 0.0) if node in self.users else 0.0
            total += sum(walk(child) for child in self.children.get(node, ()))
            out[node] = total
            return total

        for top in self.children.get(None, ()):
            walk(top)
        return out

    def share_ratio(self, node: str) -> float:
        siblings = sum(self.shares[s] for s in self.children[self.parent[node]])
        return self.shares[node] / siblings if siblings > 0 else 0.0


def classic(tree: Hierarchy, usage: Mapping[str, float], total: float | None = None
            ) -> dict[str, float]:
    """Each user's classic fair-share factor; ``usage`` is raw per user, normalized by
    ``total`` (default: all users' usage)."""
    raw = tree.raw_usage(usage)
    total = sum(usage.get(u, 0.0) for u in tree.users) if total is None else total
    norm = {n: (v / total if total > 0 else 0.0) for n, v in raw.items()}
    factors: dict[str, float] = {}

    def walk(node: str, share: float, parent_effective: float | None) -> None:
        share *= tree.share_ratio(node)
        actual = norm[node]
        effective = actual if parent_effective is None else (
            actual + (parent_effective - actual) * tree.share_ratio(node))
        if node in tree.users:
            factors[node] = 2.0 ** (-effective / share) if share > 0 else 0.0
        for child in tree.children.get(node, ()):
            walk(child, share, effective)

    for top in tree.children.get(None, ()):
        walk(top, 1.0, None)
    return factors


def level_fairshare(tree: Hierarchy, raw: Mapping[str, float], node: str) -> float:
    siblings = tree.children[tree.parent[node]]
    used = sum(raw[s] for s in siblings)
    usage = raw[node] / used if used > 0 else 0.0
    return tree.share_ratio(node) / usage if usage > 0 else math.inf


def fair_tree(tree: Hierarchy, usage: Mapping[str, float]) -> dict[str, float]:
    """Each user's Fair Tree factor (rank / number of users, 1.0 first)."""
    raw = tree.raw_usage(usage)
    count = len(tree.users)
    factors: dict[str, float] = {}
    rank = count

    def visit(nodes: list[str]) -> None:
        nonlocal rank
        levels = {n: level_fairshare(tree, raw, n) for n in nodes}
        for value in sorted(set(levels.values()), reverse=True):
            tied = sorted(n for n in nodes if levels[n] == value)
            accounts = [n for n in tied if n not in tree.users]
            users = [n for n in tied if n in tree.users]
            if accounts:  # tied accounts: their children merged; a tied user ranks as the
                first = rank  # highest-ranked user of those accounts
                visit([c for a in accounts for c in tree.children.get(a, ())])
                for user in users:
                    factors[user] = first / count
                rank -= len(users)
            elif users:
                for user in users:
                    factors[user] = rank / count
                rank -= len(users)

    visit(list(tree.children.get(None, ())))
    return factors
