"""A job's synchronisation cost as it could have learned it from the sizes it has run on.

Pollux (OSDI'21 §3.2, §4.1) fits each job's iteration-time model online from its own steps;
the scheduler sees the fitted model. The Pollux artifact's fit (petuum/adaptdl
``osdi21-artifact``, ``simulator/goodput.py`` ``fit_perf_params``, Apache-2.0) pins the terms
it has no observations for at their lower bound (10⁻⁸), and after a fit with no multi-node
observation raises the cross-node terms to 1.1 × the within-node ones. So a job that has only
run on one GPU looks as if it synchronised for free, one that ran on one node at most 2 GPUs
has no per-GPU sync term, and cross-node sync is guessed from within-node sync until the job
has run across nodes.

dlsched knows the true (bundled) parameters; ``learned_sync`` keeps them for the terms the job
could have measured and applies the priors above to the others. The observed terms are the
true ones, not a fit to noisy steps; a job "ran across nodes" once the policy has held it on
more than one node (which it must be to run on more workers than a node holds).
"""

from __future__ import annotations

from dataclasses import replace

from dlsched.perf.goodput.iteration_time import PerfParams

UNOBSERVED = 1e-8  # the artifact's lower bound for a term it has no observation for
CROSS_NODE_PRIOR = 1.1  # cross-node terms at least 1.1 x within-node after a one-node fit


def learned_sync(true: PerfParams, most_workers: int, node_size: int,
                 ran_across_nodes: bool = False) -> PerfParams:
    """``true`` with the sync terms a job that ran on at most ``most_workers`` workers (nodes
    of ``node_size`` GPUs), across nodes or not, could not have measured replaced by the
    artifact's priors."""
    if ran_across_nodes or most_workers > node_size:
        return true
    if most_workers <= 1:
        return replace(true, alpha_r=UNOBSERVED, beta_r=UNOBSERVED, alpha_n=UNOBSERVED,
                       beta_n=UNOBSERVED)
    beta_r = true.beta_r if most_workers > 2 else UNOBSERVED
    return replace(true, beta_r=beta_r, alpha_n=CROSS_NODE_PRIOR * true.alpha_r,
                   beta_n=CROSS_NODE_PRIOR * beta_r)
