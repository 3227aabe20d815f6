"""When a FIFO round of Gavel's simulator keeps every running job where it is, told without
ranking or walking it (``ArtifactGavelRounds.allocate``).

Gavel's heterogeneity-aware FIFO (``fifo_perf``; ``efficiency.fifo_hetero``) gives each job it
places all of its time on one type, and its walk lists only the entries of priority > 0,
those with ``X > 0`` on a type the job can run on (``artifact_rounds`` module docstring). So
when every solved job has such a type for exactly one type (its *single* type), its list
entries are that one, whatever the priorities. If then, between two solves,

- the running jobs are exactly the solved jobs still tracked (none waits with ``X > 0``),
- each runs its whole gang on nodes of its single type, and no node is down,

each type's entries ask for no more GPUs than the running jobs hold there, so the walk, in
whatever order the priorities give, takes every entry; ``place_round`` keeps each job on the
nodes it holds (they are of its type and hold its gang); and the round's targets are every
running job kept, none started or moved: the answer, with no priorities, lists, walk or
placement computed. The type order drawn each round (``shuffle_types``) is a random draw:
agnostic rounds are never told this way. FIFO at 1,000 jobs: 331 of 393 rounds. Each round
compares two dicts (``held_type``), each running job's nodes read again only when they
change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np


def single_types(job_ids: Sequence[str], x: np.ndarray, speed: np.ndarray
                 ) -> dict[str, int] | None:
    """Each job's one type with ``X > 0`` where it can run (``speed > 0``); jobs with none
    are left out; None when some job has two or more such types (rows: ``job_ids``)."""
    allowed = (x > 0) & (speed > 0)
    count = allowed.sum(axis=1)
    if (count > 1).any():
        return None
    kinds = allowed.argmax(axis=1).tolist()
    return {job_id: kind for job_id, kind, n in zip(job_ids, kinds, count.tolist(),
                                                     strict=True) if n}


def held_type(held: tuple[int, ...], workers: int | None, node_kind: list[int]) -> int:
    """The one type of a running job's nodes (``held``) when they hold its whole gang
    (``workers``; None: not tracked) and are all of that type; else -1. ``keeps_all`` holds
    exactly when ``single`` equals the running jobs' held types, a test of two dicts that
    ``ArtifactGavelRounds`` makes each round, keeping the held types as jobs move."""
    if len(held) != workers:
        return -1
    kind = node_kind[held[0]]
    for node in held:
        if node_kind[node] != kind:
            return -1
    return kind


def keeps_all(single: Mapping[str, int], current: Mapping[str, tuple[int, ...]],
              workers: Mapping[str, int], node_kind: list[int]) -> bool:
    """Whether the running jobs (``current``: each one's nodes) are exactly the tracked jobs
    of ``single`` (the caller drops the jobs that left), each on nodes of its single type
    only, holding its whole gang (module docstring; the caller checks that no node is
    down)."""
    if len(single) != len(current):
        return False
    for job_id, held in current.items():
        kind = single.get(job_id)
        if kind is None or len(held) != workers[job_id]:
            return False
        for node in held:
            if node_kind[node] != kind:
                return False
    return True
