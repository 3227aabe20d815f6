"""Several models on shared GPUs with model parallelism (AlpaServe: Li et al., "AlpaServe:
Statistical Multiplexing with Model Parallelism for Deep Learning Serving", OSDI'23).

The rule (AlpaServe §3-§5): split the GPUs into groups of ``P`` GPUs; a group runs each model
it hosts as a ``P``-stage pipeline (inter-operator parallelism), so every model on a group can
use all of its GPUs during its burst, and the group holds ``P`` times one GPU's memory of
weights. Which models go on which group is chosen greedily (Algorithm 1): repeatedly add the
(model, group) replica that most raises SLO attainment on the workload, simulated, until no
replica fits or raises it; the group size is chosen by enumerating ``P`` (Algorithm 2, with
one group shape per ``P``). A dedicated placement (each model alone on ``G / M`` GPUs, one
replica per GPU) is the baseline AlpaServe compares with (its "Selective Replication").

Serving model: requests are served one at a time per pipeline stage (AlpaServe's §6 setting,
no batching), first come first served per group; a request of a model with single-GPU
latency ``L`` takes ``L / P x (1 + stage_overhead x (P - 1))`` per stage (the stages' uneven
split and the activations sent between them, AlpaServe §3.2 and Fig. 5: a few percent per
stage, ``stage_overhead`` is our assumption). A request goes to the group hosting its model
with the fewest requests outstanding. Its SLO is ``slo_scale x L`` (AlpaServe's "SLO scale").
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ServedModel:
    name: str
    latency: float  # seconds for one request on one GPU
    memory_gb: float  # weights


@dataclass(frozen=True)
class Workload:
    """Requests in arrival order: their time and model index."""

    arrival: np.ndarray
    model: np.ndarray

    @classmethod
    def gamma(cls, rates: Sequence[float], cv: float, duration: float, seed: int) -> Workload:
        """Each model's arrivals a Gamma renewal process with its rate and inter-arrival CV
        (AlpaServe §6.1's synthetic workload), seeded."""
        rng = np.random.default_rng(seed)
        times, models = [], []
        for m, rate in enumerate(rates):
            shape = 1 / cv ** 2
            gaps = rng.gamma(shape, 1 / (rate * shape), int(rate * duration * 2) + 16)
            t = np.cumsum(gaps)
            t = t[t < duration]
            times.append(t)
            models.append(np.full(len(t), m))
        arrival, model = np.concatenate(times), np.concatenate(models)
        order = np.argsort(arrival, kind="stable")
        return cls(arrival[order], model[order])


@dataclass(frozen=True)
class Group:
    gpus: int  # pipeline stages
    models: frozenset[int]


@dataclass(frozen=True)
class Placement:
    groups: tuple[Group, ...]

    def describe(self, models: Sequence[ServedModel]) -> str:
        return "; ".join(f"{g.gpus} GPU{'s' * (g.gpus > 1)}: "
                         + ",".join(models[m].name for m in sorted(g.models))
                         for g in self.groups)


def stage_seconds(model: ServedModel, stages: int, overhead: float) -> float:
    return model.latency / stages * (1 + overhead * (stages - 1))


def serve(placement: Placement, models: Sequence[ServedModel], workload: Workload,
          overhead: float = 0.05) -> np.ndarray:
    """Each request's latency (inf when no group hosts its model). A group is a FIFO tandem
    of ``gpus`` stages: a request leaves stage ``s`` at ``max(it left s - 1, the previous
    request left s) + its stage time``."""
    last = [np.zeros(g.gpus) for g in placement.groups]  # when each stage frees
    finishes: list[list[float]] = [[] for _ in placement.groups]  # sorted finish times
    hosts = [[i for i, g in enumerate(placement.groups) if m in g.models]
             for m in range(len(models))]
    latency = np.full(len(workload.arrival), np.inf)
    for k, (t, m) in enumerate(zip(workload.arrival.tolist(), workload.model.tolist(),
                                   strict=True)):
        if not hosts[m]:
            continue
        g = min(hosts[m], key=lambda i: (len(finishes[i]) - bisect.bisect_right(
            finishes[i], t), i))
        stage = stage_seconds(models[m], placement.groups[g].gpus, overhead)
        done = t
        for s in range(placement.groups[g].gpus):
            done = max(done, last[g][s]) + stage
            last[g][s] = done
        bisect.insort(finishes[g], done)
        latency[k] = done - t
    return latency


def attainment(placement: Placement, models: Sequence[ServedModel], workload: Workload,
               slo_scale: float, overhead: float = 0.05) -> float:
    latency = serve(placement, models, workload, overhead)
    bound = np.array([models[m].latency * slo_scale for m in workload.model.tolist()])
    return float((latency <= bound).mean()) if len(latency) else 1.0


def dedicated(models: Sequence[ServedModel], gpus: int) -> Placement:
    """Each model alone on ``gpus // M`` single-GPU replicas (leftover GPUs to the first
    models)."""
    share = [gpus // len(models) + (i < gpus % len(models)) for i in range(len(models))]
    return Placement(tuple(Group(1, frozenset({m})) for m, n in enumerate(share)
                           for _ in range(n)))


def greedy(models: Sequence[ServedModel], workload: Workload, gpus: int, stages: int,
           gpu_memory_gb: float, slo_scale: float, overhead: float = 0.05) -> Placement:
    """AlpaServe's Algorithm 1 for groups of ``stages`` GPUs: start empty; add the (model,
    group) replica that raises SLO attainment most (ties: the lowest group, then model), while
    one fits in memory and raises it."""
    groups = [set[int]() for _ in range(gpus // stages)]
    budget = stages * gpu_memory_gb
    best = attainment(_placement(groups, stages), models, workload, slo_scale, overhead)
    while True:
        choice = None
        for g, hosted in enumerate(groups):
            used = sum(models[m].memory_gb for m in hosted)
            for m in range(len(models)):
                if m in hosted or used + models[m].memory_gb > budget:
                    continue
                trial = [set(h) | ({m} if i == g else set()) for i, h in enumerate(groups)]
                score = attainment(_placement(trial, stages), models, workload, slo_scale,
                                   overhead)
                if score > best + 1e-12 and (choice is None or score > choice[0]):
                    choice = (score, g, m)
        if choice is None:
            return _placement(groups, stages)
        best, g, m = choice
        groups[g].add(m)


def _placement(groups: list[set[int]], stages: int) -> Placement:
    return Placement(tuple(Group(stages, frozenset(h)) for h in groups if h))


def alpaserve(models: Sequence[ServedModel], workload: Workload, gpus: int,
              gpu_memory_gb: float, slo_scale: float, overhead: float = 0.05,
              group_sizes: Sequence[int] = (1, 2, 4, 8)) -> tuple[Placement, int, float]:
    """AlpaServe's Algorithm 2 (one group shape per size): the best greedy placement over
    the group sizes that divide ``gpus``; returns it, its group size and SLO attainment."""
    best: tuple[Placement, int, float] | None = None
    for p in group_sizes:
        if p > gpus or gpus % p:
            continue
        placement = greedy(models, workload, gpus, p, gpu_memory_gb, slo_scale, overhead)
        score = attainment(placement, models, workload, slo_scale, overhead)
        if best is None or score > best[2]:
            best = (placement, p, score)
    assert best is not None, "no group size divides the GPUs"
    return best
