"""Gavel's policies (Narayanan et al., OSDI'20 §4) as registered, round-based policies (§5).

Each builder pairs one LP objective of ``dlsched.policies.gavel`` with the round mechanism of
``gavel_round.GavelRounds``: the allocation ``X`` is solved when the set of active jobs changes,
and every ``round_seconds`` (6 minutes, as in Gavel) all active jobs are re-assigned by priority
``X[j, t] / (time fraction received on t)``: running jobs may stay, move type or be preempted.
``pop_k > 1`` solves ``X`` with POP (Narayanan et al., SOSP'21) on that many random sub-problems.

Jobs need Gavel job types (``spec.model`` and ``spec.batch_size`` of Gavel's table, as in
Gavel's traces with the ``gavel`` throughput model); others raise ``ConfigError``.
``gavel-maxmin-packed`` adds space sharing (§3.1): ``gavel.packed_round.PackedGavelRounds``
schedules single jobs and co-located pairs, a pair on the same GPUs at half a share each.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dlsched.errors import ConfigError
from dlsched.perf.gavel_table import WORKER_TYPES
from dlsched.policies.gavel.efficiency import fifo_hetero, min_cost, min_makespan
from dlsched.policies.gavel.fairness import las, max_min_fairness, weighted_fairness
from dlsched.policies.gavel.ftf import finish_time_fairness
from dlsched.policies.gavel.packed import max_min_fairness_packed
from dlsched.policies.gavel.packed_round import PackedGavelRounds
from dlsched.policies.gavel.problem import AllocationProblem
from dlsched.policies.gavel_round import GavelRounds, Objective
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy
from dlsched.workload.job import Job

ROUND_SECONDS = 360.0
# On-demand $/GPU-hour for k80, p100, v100 (the cloud prices Gavel's cost policy used).
DEFAULT_PRICES = (0.9, 1.46, 3.06)
# Other GPU types' on-demand $/GPU-hour (Google Cloud list prices: T4 0.35, A100 40 GB 2.93);
# ``type_prices`` overrides them.
OTHER_TYPE_PRICES = {"t4": 0.35, "a100": 2.93}


MECHANISMS = ("paper", "artifact")


def gavel_profile(name: str, objective: Objective, round_seconds: float, pop_k: int,
                  placement: str, rounds_type: type[GavelRounds] = GavelRounds,
                  mechanism: str = "paper", agnostic: bool = False, fifo: bool = False,
                  **kwargs: object) -> Profile:
    """The profile of a round-based Gavel policy: one ``GavelRounds`` allocation plugin
    that re-assigns every job each round; cycles every round even when nothing waits.
    ``mechanism="artifact"``: the rounds as Gavel's own simulator runs them
    (``gavel.artifact_rounds``; its type order is random each round for an ``agnostic``
    policy, and ``fifo`` skips entries of priority 0)."""
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if mechanism == "artifact":
        if rounds_type is not GavelRounds:
            raise ValueError(f"policy {name}: mechanism=artifact has no space sharing")
        from dlsched.policies.gavel.artifact_rounds import ArtifactGavelRounds

        rounds_type = ArtifactGavelRounds
        kwargs = {**kwargs, "shuffle_types": agnostic, "fifo": fifo}
    rounds = rounds_type(name, objective, round_seconds=round_seconds, pop_k=pop_k,
                         **kwargs)  # type: ignore[arg-type]
    return Profile(name, rounds, plugins=(rounds,), placement=placement,
                   round_seconds=round_seconds, acts_on_running=True)


@register_policy("gavel-maxmin")
def gavel_maxmin(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
                 placement: str = "consolidated", mechanism: str = "paper",
                 warm_start: bool = False) -> Profile:
    """Gavel heterogeneity-aware max-min fairness (OSDI'20 §4.1), in 6-minute rounds (§5).
    ``warm_start=true``: each LP starts from the last one's basis (faster; where the optimum
    is not unique, possibly another optimal allocation)."""
    return gavel_profile("gavel-maxmin", max_min_fairness, round_seconds, pop_k, placement,
                         mechanism=mechanism, warm_start=warm_start)


@register_policy("gavel-maxmin-agnostic")
def gavel_maxmin_agnostic(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
                          placement: str = "consolidated", mechanism: str = "paper") -> Profile:
    """Gavel's heterogeneity-agnostic max-min fairness baseline (OSDI'20 §4.1, §7)."""
    return gavel_profile("gavel-maxmin-agnostic", max_min_fairness, round_seconds, pop_k,
                         placement, options={"heterogeneity_aware": False},
                         mechanism=mechanism, agnostic=True)


@register_policy("gavel-maxmin-packed")
def gavel_maxmin_packed(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
                        placement: str = "consolidated") -> Profile:
    """Gavel max-min fairness with space sharing (OSDI'20 §3.1, §4.1): jobs alone or in
    co-located pairs, in rounds (§5)."""
    return gavel_profile("gavel-maxmin-packed", max_min_fairness_packed, round_seconds, pop_k,
                         placement, rounds_type=PackedGavelRounds)


@register_policy("gavel-ftf")
def gavel_ftf(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
              placement: str = "consolidated", mechanism: str = "paper",
              pareto: bool = True) -> Profile:
    """Gavel finish-time fairness, Themis' rho (OSDI'20 §4.2), in rounds; ``pareto=false``
    keeps the min-max-rho allocation as Gavel's own policy does (no second stage filling
    capacity the bottleneck jobs cannot use)."""
    return gavel_profile("gavel-ftf", finish_time_fairness, round_seconds, pop_k, placement,
                         options={"pareto": pareto}, mechanism=mechanism)


@register_policy("gavel-las")
def gavel_las(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
              placement: str = "consolidated", mechanism: str = "paper",
              warm_start: bool = False) -> Profile:
    """Gavel least attained service as an LP (OSDI'20 §4.1), in rounds; ``warm_start`` as
    for gavel-maxmin."""
    return gavel_profile("gavel-las", las, round_seconds, pop_k, placement,
                         options={"horizon": round_seconds},
                         mechanism=mechanism, warm_start=warm_start)


@register_policy("gavel-makespan")
def gavel_makespan(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
                   placement: str = "consolidated", mechanism: str = "paper") -> Profile:
    """Gavel minimize makespan (OSDI'20 §4.2), in rounds."""
    return gavel_profile("gavel-makespan", min_makespan, round_seconds, pop_k, placement,
                         mechanism=mechanism)


@register_policy("gavel-fifo")
def gavel_fifo(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
               placement: str = "consolidated", mechanism: str = "paper") -> Profile:
    """Gavel FIFO on heterogeneous GPUs: each job in arrival order on its fastest free type."""
    return gavel_profile("gavel-fifo", fifo_hetero, round_seconds, pop_k, placement,
                         mechanism=mechanism, fifo=True)


@register_policy("gavel-weighted")
def gavel_weighted(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
                   placement: str = "consolidated") -> Profile:
    """Gavel hierarchical weighted fairness (OSDI'20 §4.3): tenant queues (``JobSpec.queue``)
    share equally, jobs within a queue by weight ``1 + max(priority, 0)``."""
    return gavel_profile("gavel-weighted", weighted_fairness, round_seconds, pop_k, placement,
                         refine=by_tenant)


@register_policy("gavel-cost")
def gavel_cost(round_seconds: float = ROUND_SECONDS, pop_k: int = 1,
               prices: tuple = DEFAULT_PRICES, type_prices: str = "",
               placement: str = "consolidated") -> Profile:
    """Gavel minimize cost (OSDI'20 §4.2); ``prices`` $/GPU-hour for k80:p100:v100, and
    ``type_prices`` for any cluster GPU type as ``NAME=price,NAME=price`` (T4 and A100 have
    defaults, ``OTHER_TYPE_PRICES``; it overrides ``prices`` for the types it names)."""
    if len(prices) != len(WORKER_TYPES) or min(prices) <= 0:
        raise ValueError(f"prices needs {len(WORKER_TYPES)} positive numbers "
                         f"({':'.join(WORKER_TYPES)}), got {prices}")
    by_type = {**OTHER_TYPE_PRICES, **dict(zip(WORKER_TYPES, prices, strict=True)),
               **_type_prices(type_prices)}

    def options(problem: AllocationProblem) -> dict:
        missing = [t for t in problem.worker_types if t.casefold() not in by_type]
        if missing:
            raise ConfigError(f"policy gavel-cost: no price for GPU type {missing[0]!r}: give "
                              f"one with --policy-opt type_prices={missing[0]}=PRICE")
        return {"prices": [by_type[t.casefold()] for t in problem.worker_types]}

    return gavel_profile("gavel-cost", min_cost, round_seconds, pop_k, placement,
                         options=options)


def _type_prices(text: str) -> dict[str, float]:
    """``"T4=0.35,A100=2.93"`` -> ``{"t4": 0.35, "a100": 2.93}`` (names case-folded)."""
    out: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, sep, value = item.partition("=")
        try:
            price = float(value)
        except ValueError:
            price = -1.0
        if not sep or not name.strip() or price <= 0:
            raise ValueError(f"type_prices: {item!r} is not NAME=PRICE with a positive price")
        out[name.strip().casefold()] = price
    return out


def by_tenant(problem: AllocationProblem, jobs: Sequence[Job]) -> AllocationProblem:
    """Tenants = queues with equal weights; job weights ``1 + max(priority, 0)``."""
    import dataclasses

    queues = sorted({job.spec.queue for job in jobs})
    index = {name: i for i, name in enumerate(queues)}
    return dataclasses.replace(
        problem, tenant=np.array([index[job.spec.queue] for job in jobs]),
        tenant_weights=np.ones(len(queues)),
        weights=np.array([1.0 + max(job.spec.priority, 0) for job in jobs]))
