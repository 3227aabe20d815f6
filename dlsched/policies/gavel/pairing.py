"""Turn class-level co-location time into job pairs (the packed LP's realization step).

The packed LP works on classes of identical jobs: it decides ``p``, the total pair-time
(pairs x time fraction) that class ``c`` jobs spend sharing GPUs of one type with class ``d``
jobs, and gives every job of a class the same share. Any split of ``p`` over concrete job pairs
that gives each class-``c`` job ``p / m_c`` (and each ``d`` job ``p / m_d``) realizes it. We use
one with few pairs, so that a round-based mechanism has few combinations to schedule:

* ``c != d``: the north-west-corner rule on uniform margins, at most ``m_c + m_d - 1`` pairs;
* ``c == d``: a ring, job ``i`` with job ``i + 1 (mod m)``, each pair for ``p / m``
  (each job is in two pairs, ``2 p / m`` in all); two jobs share ``p`` as one pair.
"""

from __future__ import annotations

import numpy as np


def split_between(total: float, m_first: int, m_second: int
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Local job indices of each pair and its time: a split of ``total`` pair-time between
    ``m_first`` and ``m_second`` jobs, equal per job on each side."""
    # On an integer line of length m_first * m_second, first-side job i covers
    # [i m_second, (i + 1) m_second) and second-side job j covers [j m_first, (j + 1) m_first).
    cuts = np.union1d(np.arange(m_first + 1) * m_second, np.arange(m_second + 1) * m_first)
    starts, lengths = cuts[:-1], np.diff(cuts)
    unit = total / (m_first * m_second)
    return starts // m_second, starts // m_first, lengths * unit


def split_within(total: float, members: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A split of ``total`` pair-time among ``members`` jobs of one class, ``2 total / m`` each."""
    if members < 2:
        raise ValueError("a job cannot share GPUs with itself")
    if members == 2:
        return np.array([0]), np.array([1]), np.array([total])
    first = np.arange(members)
    return first, (first + 1) % members, np.full(members, total / members)


def job_pairs(members: list[np.ndarray], shared: list[tuple[int, int, int, float]],
              n_types: int) -> tuple[np.ndarray, np.ndarray]:
    """``(pairs, pair_x)`` over job indices from ``(class c, class d, type, pair-time)`` items;
    ``members[c]`` lists the jobs of class ``c``."""
    firsts, seconds, types, times = [], [], [], []
    for first_class, second_class, kind, total in shared:
        if first_class == second_class:
            a, b, time = split_within(total, len(members[first_class]))
        else:
            a, b, time = split_between(total, len(members[first_class]),
                                       len(members[second_class]))
        firsts.append(members[first_class][a])
        seconds.append(members[second_class][b])
        types.append(np.full(len(time), kind))
        times.append(time)
    if not times:
        return np.zeros((0, 2), dtype=np.int64), np.zeros((0, n_types))
    both = np.column_stack([np.concatenate(firsts), np.concatenate(seconds)])
    pairs, index = np.unique(np.sort(both, axis=1), axis=0, return_inverse=True)
    pair_x = np.zeros((len(pairs), n_types))
    np.add.at(pair_x, (index.ravel(), np.concatenate(types)), np.concatenate(times))
    return pairs, pair_x
