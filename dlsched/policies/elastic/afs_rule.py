"""AFS-L, the allocation loop of Apathetic Future Share (Hwang et al., *Elastic Resource
Sharing for Distributed Deep Learning*, NSDI'21 §3.2–3.3).

AFS hands out GPUs one at a time. For two jobs ``a`` (the shorter: less remaining time) and
``b`` that both want the next GPU, with throughputs ``t`` now and ``t'`` with one more GPU,
the paper's two-job analysis (§3.2) minimizes the sum of their completion times while being
*apathetic* about the future (after ``a`` finishes, ``b`` keeps the GPU it would have had): give
the GPU to ``a`` and ``a`` finishes at ``l_a/t_a'`` while ``b`` runs at ``t_b``; give it to ``b``
and ``a`` finishes at ``l_a/t_a``. Comparing the two sums gives the rule implemented here:

    give the GPU to the longer job b  iff  (t_b' − t_b) / t_b'  >  (t_a' − t_a) / t_a

(the shorter job's gain is relative to its current speed, the longer job's to its new one, so
ties and linear scaling favour the shorter job, as SRTF would). A job with no GPU has
``t_a = 0``: an infinite relative gain, so a waiting short job is served first.

With many jobs (§3.3, AFS-L), the candidate is found by a pass over the jobs in order of
remaining length: the current candidate plays ``a`` against each longer job ``b``, and ``b``
becomes the candidate when the rule prefers it. The winner gets one GPU (a job with a declared
minimum gets that many at once); the loop stops when GPUs run out or no job's throughput grows
with one more GPU (AFS is work-conserving otherwise).
"""

from __future__ import annotations

import numpy as np


def afs_allocate(curves: np.ndarray, lo: np.ndarray, hi: np.ndarray, lengths: np.ndarray,
                 free: int) -> np.ndarray:
    """Workers per job. ``curves[j, n]``: job j's throughput on n workers (relative units
    are fine: the rule compares ratios); ``lengths[j]``: its remaining length (the order of
    the pass; ties by row)."""
    jobs = curves.shape[0]
    order = np.lexsort((np.arange(jobs), lengths))
    alloc = np.zeros(jobs, dtype=np.int64)
    rows = np.arange(jobs)
    while free > 0:
        nxt = np.where(alloc == 0, lo, alloc + 1)
        step = nxt - alloc
        capped = np.minimum(nxt, curves.shape[1] - 1)
        now, new = curves[rows, alloc], curves[rows, capped]
        valid = (nxt <= hi) & (step <= free) & (new > now)
        if not valid.any():
            break
        with np.errstate(divide="ignore", invalid="ignore"):
            gain_a = np.where(now > 0, (new - now) / np.where(now > 0, now, 1.0), np.inf)
            gain_b = (new - now) / np.where(new > 0, new, 1.0)
        winner = _tournament(order[valid[order]], gain_a, gain_b)
        alloc[winner] = nxt[winner]
        free -= int(step[winner])
    return alloc


def _tournament(candidates: np.ndarray, gain_a: np.ndarray, gain_b: np.ndarray) -> int:
    """The AFS-L pass over ``candidates`` (shortest first): the candidate is replaced by the
    first longer job that the pairwise rule prefers to it."""
    position = 0
    while True:
        best = candidates[position]
        later = candidates[position + 1:]
        beats = np.flatnonzero(gain_b[later] > gain_a[best])
        if not len(beats):
            return int(best)
        position += int(beats[0]) + 1
