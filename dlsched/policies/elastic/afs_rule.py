"""AFS-L, the allocation loop of Apathetic Future Share (Hwang et al., *Elastic Resource
Sharing for Distributed Deep Learning*, NSDI'21 §3.2–3.3).

AFS hands out GPUs one at a time (AFS-P, for unknown lengths, differs only in the order of the
pass: ``reorder=False`` below, see ``policies/afs.py``). For two jobs ``a`` (the shorter: less
remaining time) and ``b`` that both want the next GPU, with throughputs ``t`` now and ``t'``
with one more GPU, the paper's two-job analysis (§3.2) minimizes the sum of their completion
times while being *apathetic* about the future (after ``a`` finishes, ``b`` keeps the GPU it
would have had): give the GPU to ``a`` and ``a`` finishes at ``l_a/t_a'`` while ``b`` runs at
``t_b``; give it to ``b`` and ``a`` finishes at ``l_a/t_a``. Comparing the two sums gives the
rule implemented here:

    give the GPU to the longer job b  iff  (t_b' − t_b) / t_b'  >  (t_a' − t_a) / t_a

(the shorter job's gain is relative to its current speed, the longer job's to its new one, so
ties and linear scaling favour the shorter job, as SRTF would). A job with no GPU has
``t_a = 0``: an infinite relative gain, so a waiting short job is served first.

With many jobs (§3.3, AFS-L), the candidate is found by a pass over the jobs in order of
remaining time *at the GPUs the loop has given them so far* (infinite with none; jobs with none
by their length on their smallest size): the current candidate plays ``a`` against each longer
job ``b``, and ``b`` becomes the candidate when the rule prefers it. Which job of a pair is
"shorter" thus changes as the loop hands out GPUs: a long job that has received many GPUs
finishes before a short one held at one GPU, and then plays ``a`` (as in the AFS-L loops of
Voda's ``afsl.go`` and of other public re-implementations; ordering once by length on one GPU
gave the short job the GPU where the paper's rule gives it to the long one, see
tests/policies/test_afs.py). The winner gets one GPU (a job with a declared
minimum gets that many at once); the loop stops when GPUs run out or no job's throughput grows
with one more GPU (AFS is work-conserving otherwise).
"""

from __future__ import annotations

import numpy as np


def afs_allocate(curves: np.ndarray, lo: np.ndarray, hi: np.ndarray, lengths: np.ndarray,
                 free: int, reorder: bool = True) -> np.ndarray:
    """Workers per job. ``curves[j, n]``: job j's throughput on n workers (relative units
    are fine: the rule compares ratios); ``lengths[j]``: its remaining length on its smallest
    size ``lo[j]``; ``lo``, ``hi``: its fewest and most workers, ``hi[j] <
    curves.shape[1]`` (a job with ``lo > hi`` gets none). Each pass changes only the winner,
    so only its entries are recomputed. ``reorder=False`` (AFS-P, ``policies/afs.py``): the
    pass keeps the order of ``lengths`` (then index) all round, as a length proxy such as
    attained service does not shrink with the GPUs the loop hands out."""
    jobs, width = curves.shape[0], curves.shape[1] - 1
    rows = np.arange(jobs)
    smallest = curves[rows, np.minimum(lo, width)].astype(float)
    remaining = np.full(jobs, np.inf)  # remaining time at the workers given so far
    alloc = np.zeros(jobs, dtype=np.int64)
    nxt = np.asarray(lo, dtype=np.int64).copy()
    step = nxt.copy()
    now = curves[:, 0].astype(float)
    new = curves[np.arange(jobs), np.minimum(nxt, width)].astype(float)
    valid = (nxt <= hi) & (new > now)
    with np.errstate(divide="ignore", invalid="ignore"):
        gain_a = np.where(now > 0, (new - now) / np.where(now > 0, now, 1.0), np.inf)
        gain_b = (new - now) / np.where(new > 0, new, 1.0)
    while free > 0:
        order = np.lexsort((rows, lengths, remaining))
        candidates = order[(valid & (step <= free))[order]]
        if not len(candidates):
            break
        if len(candidates) == 1:  # it would win every pass until it stops growing
            free -= _grow_alone(int(candidates[0]), curves, alloc, nxt, hi, free)
            break
        winner = _tournament(candidates, gain_a, gain_b)
        free -= int(step[winner])
        alloc[winner] = nxt[winner]
        nxt[winner], step[winner] = alloc[winner] + 1, 1
        before, after = curves[winner, alloc[winner]], curves[winner, min(nxt[winner], width)]
        now[winner], new[winner] = before, after
        if reorder:
            remaining[winner] = lengths[winner] * smallest[winner] / before
        valid[winner] = nxt[winner] <= hi[winner] and after > before
        gain_a[winner] = (after - before) / before if before > 0 else np.inf
        gain_b[winner] = (after - before) / (after if after > 0 else 1.0)
    return alloc


def _tournament(candidates: np.ndarray, gain_a: np.ndarray, gain_b: np.ndarray) -> int:
    """The AFS-L pass over ``candidates`` (shortest remaining time first): the candidate is
    replaced by the first longer job that the pairwise rule prefers to it."""
    position = 0
    while True:
        best = candidates[position]
        later = candidates[position + 1:]
        beats = np.flatnonzero(gain_b[later] > gain_a[best])
        if not len(beats):
            return int(best)
        position += int(beats[0]) + 1


def _grow_alone(job: int, curves: np.ndarray, alloc: np.ndarray, nxt: np.ndarray,
                hi: np.ndarray, free: int) -> int:
    """The only job that can use another GPU takes them, one step at a time as the loop
    would, while its throughput still grows, within its maximum and the free GPUs; returns
    the GPUs it took. Saves a loop pass per GPU (thousands per round on a large, quiet
    cluster)."""
    first = int(nxt[job])
    top = min(int(hi[job]), int(alloc[job]) + free,
              curves.shape[1] - 1)
    rising = np.diff(curves[job, first:top + 1]) > 0
    stop = int(np.argmin(rising)) if not rising.all() else len(rising)
    taken = first + stop - int(alloc[job])
    alloc[job] = first + stop
    return taken
