"""Placement: choose GPUs for a gang, node by node, with Filter and Score plugins.

Each step filters the nodes once, scores those with room, takes as many workers as fit on the
best node (ties go to the lowest node index, so placement is deterministic), and repeats until
every worker is placed. Failing part-way gives the GPUs back: a gang is placed whole or not at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.scheduling.framework import SUCCESS, FilterPlugin, ScorePlugin, Status, unschedulable
from dlsched.scheduling.hooks import SingleNodeScore, optional
from dlsched.scheduling.plugin_checks import checked_mask
from dlsched.scheduling.resources import most_workers_per_node, node_room
from dlsched.scheduling.state import EPS, CycleState, layout_of
from dlsched.wording import CountTexts, count_of
from dlsched.workload.job import Job

# "needs 1 GPU", "needs 4 GPUs": how a reason starts, made once per count (a reason is written
# per failed attempt: ~10^5-10^6 times on the contended Philly table)
NEEDS = CountTexts("needs {}", "GPU")
# Nothing free reads one way whichever path found it (the cycle's free count, ``place``, its
# single-GPU shortcut, ``count_miss``): it read "0 free", "0 free on fitting nodes" and "none
# free on fitting nodes" for the same full node.
NONE_FREE = CountTexts("needs {}, none free on fitting nodes", "GPU")


def no_room_text(need: int, free: int, where: str = " on fitting nodes") -> str:
    """Why a job of ``need`` whole GPUs waits beside ``free`` ones ``where`` (the cycle's
    count of the whole cluster passes ""): "needs 4 GPUs, 2 free on fitting nodes"; none free
    on the whole cluster is none on the fitting nodes, so that reads alike."""
    if free == 0:
        return NONE_FREE[need]
    return f"{NEEDS[need]}, {free} free{where}"


def filter_nodes(state: CycleState, job: Job, filters: Sequence[FilterPlugin]
                 ) -> tuple[np.ndarray, Status]:
    """Nodes that pass every filter. Filters marked ``static`` depend only on the job's spec:
    their combined mask is cached per (cluster, model, filters, spec shape)."""
    mask, empty, dynamic = _static_entry(state, job, filters)[:3]
    if empty:
        return mask, _first_failure(state, job, filters)
    for plugin in dynamic:
        mask = checked_mask(plugin, plugin.filter(state, job, mask), len(mask))
        if not mask.any():
            return mask, unschedulable(plugin.name, "no node passes this filter")
    return mask, SUCCESS


# Values keep the cluster, model and filters they were computed for alive, so that the ids in
# the keys cannot be reused by other objects while an entry exists.
# An entry: (mask, whether it is empty, the dynamic filters, refs, whether it allows every node).
_STATIC_MASKS: dict[tuple, tuple[np.ndarray, bool, tuple[FilterPlugin, ...], tuple, bool]] = {}


def _static_mask(state: CycleState, job: Job, filters: Sequence[FilterPlugin]
                 ) -> tuple[np.ndarray, bool, tuple[FilterPlugin, ...]]:
    """(mask of the static filters, whether it is empty, the dynamic filters), cached."""
    cached = _static_entry(state, job, filters)
    return cached[0], cached[1], cached[2]


# The same lookup by spec identity, the fast path (a cycle asks several times per job):
# id(spec) -> (spec, cluster, throughput, filters, entry, shape). Holding the spec keeps its
# id unique.
_BY_SPEC: dict[int, tuple[Any, ...]] = {}


def _spec_record(state: CycleState, job: Job, filters: Sequence[FilterPlugin]) -> tuple:
    spec = job.spec
    hit = _BY_SPEC.get(id(spec))
    snapshot = state.snapshot
    if (hit is not None and hit[0] is spec and hit[1] is snapshot.cluster
            and hit[2] is snapshot.throughput and hit[3] is filters):
        return hit
    entry = _static_entry_by_shape(state, job, filters)
    if len(_BY_SPEC) > 200_000:
        _BY_SPEC.clear()
    shape: tuple = (spec.gpu_share, entry[3][3])
    if spec.tensor_parallel > 1:  # a job in groups may fail where one of the same size fits
        shape += ("tp", spec.tensor_parallel)
    if spec.asks_beyond_gpus:  # jobs alike on GPUs may differ in what else they need
        shape += (spec.cpus_per_gpu, spec.memory_gb_per_gpu, spec.gpu_memory_gb)
        if spec.max_per_node:  # a capped group's workers compete for its slots per node
            shape += ("per-node", spec.max_per_node, spec.density_group)
    if spec.mig_profile is not None:  # slices, not shares: a MIG job fits by its profile
        shape += ("mig", spec.mig_profile)
    hit = _BY_SPEC[id(spec)] = (spec, snapshot.cluster, snapshot.throughput, filters, entry,
                                shape)
    return hit


def _static_entry(state: CycleState, job: Job, filters: Sequence[FilterPlugin]
                  ) -> tuple[np.ndarray, bool, tuple[FilterPlugin, ...], tuple, bool]:
    return _spec_record(state, job, filters)[4]


def static_shape(state: CycleState, job: Job, filters: Sequence[FilterPlugin]) -> tuple:
    """(GPU share, ``mask_signature``, and for a job asking for CPUs, host or GPU memory, those
    demands): jobs of equal shapes compete for the same resources."""
    return _spec_record(state, job, filters)[5]


def _static_entry_by_shape(state: CycleState, job: Job, filters: Sequence[FilterPlugin]
                           ) -> tuple[np.ndarray, bool, tuple[FilterPlugin, ...], tuple, bool]:
    spec = job.spec
    key = (id(state.cluster), id(state.snapshot.throughput), id(filters), spec.gpu_types,
           spec.pool, spec.model, spec.batch_size, spec.num_gpus)
    cached = _STATIC_MASKS.get(key)
    if cached is None or cached[3][0] is not state.cluster:
        mask = np.ones(state.cluster.num_nodes, dtype=bool)
        for plugin in filters:
            if getattr(plugin, "static", False):
                mask = checked_mask(plugin, plugin.filter(state, job, mask), len(mask))
        mask.flags.writeable = False
        dynamic = tuple(f for f in filters if not getattr(f, "static", False))
        if len(_STATIC_MASKS) > 100_000:
            _STATIC_MASKS.clear()
        refs = (state.cluster, state.snapshot.throughput, filters, np.packbits(mask).tobytes())
        cached = _STATIC_MASKS[key] = (mask, not mask.any(), dynamic, refs, bool(mask.all()))
    return cached


def static_mask(state: CycleState, job: Job, filters: Sequence[FilterPlugin]) -> np.ndarray:
    """The read-only node mask of ``filters``' static plugins for the job, from the cache the
    cycle keeps by spec shape (a policy that places jobs itself asks it with its own tuple)."""
    return _static_entry_by_shape(state, job, filters)[0]


def mask_signature(state: CycleState, job: Job, filters: Sequence[FilterPlugin]) -> bytes:
    """The nodes a job's static filters allow, as bytes: jobs with equal signatures (and the
    same GPU share) compete for the same GPUs, whatever else differs in their specs."""
    return _static_entry(state, job, filters)[3][3]


def unconstrained(state: CycleState, job: Job, filters: Sequence[FilterPlugin]) -> bool:
    """Whether the job's static filters let it use every node."""
    return _static_entry(state, job, filters)[4]


def max_workers(state: CycleState, job: Job, filters: Sequence[FilterPlugin]) -> int:
    """Workers of this job the whole cluster could ever host (every GPU free)."""
    mask = _static_mask(state, job, filters)[0]
    if job.spec.mig_profile is not None:
        from dlsched.mig.core import mig_workers

        return mig_workers(state.mig if state.mig is not None else state.cluster, job, mask)
    if job.spec.asks_beyond_gpus:
        return int(most_workers_per_node(state.cluster, job.spec)[mask].sum())
    # One worker a GPU, whatever its share: placement gives a job's workers distinct GPUs
    # (``pick_gpus``), so three workers of 0.3 on one GPU, once counted as room for three,
    # were accepted and waited for ever.
    return int(state.cluster.node_gpus[mask].sum())


def _first_failure(state: CycleState, job: Job, filters: Sequence[FilterPlugin]) -> Status:
    """The filter that removed the last node; where others narrowed the nodes before it, how
    many each left: a job pinned to V100 in a pool of A100 nodes read "[node-pool] no node
    passes this filter", as if its pool had no node."""
    total = state.cluster.num_nodes
    mask = np.ones(total, dtype=bool)
    left, narrowed = total, []
    for plugin in filters:
        mask = checked_mask(plugin, plugin.filter(state, job, mask), len(mask))
        before, left = left, int(mask.sum())
        if left < before:
            narrowed.append(f"{plugin.name} leaves {left}")
        if not left:
            why = getattr(plugin, "refusal", "no node passes this filter")
            if len(narrowed) > 1:
                why += f"; of {count_of(total, 'node')}, {', '.join(narrowed)}"
            return unschedulable(plugin.name, why)
    return unschedulable("filter", "no node passes the filters")


def first_refusal(state: CycleState, job: Job, filters: Sequence[FilterPlugin]) -> Status:
    """The first filter that leaves the job no node at all (every GPU free)."""
    return _first_failure(state, job, filters)


def gpu_nodes(cluster: Cluster) -> list[int]:
    """``cluster.gpu_node`` as a list of Python ints (indexing it one GPU at a time is
    several times faster than indexing the array); cached per cluster, read only."""
    return layout_of(cluster).gpu_node


def place(state: CycleState, job: Job, filters: Sequence[FilterPlugin],
          scores: Sequence[tuple[ScorePlugin, float]], take_limit: int | None = None,
          workers: int | None = None) -> tuple[tuple[int, ...], Status]:
    """GPUs for ``workers`` (default: the job's request) workers, or () and why not."""
    spec = job.spec
    need = spec.num_gpus if workers is None else workers
    share = spec.gpu_share
    mask, empty, dynamic = _spec_record(state, job, filters)[4][:3]
    if empty or dynamic:
        mask, status = filter_nodes(state, job, filters)
        if not status.ok:
            return (), status
    if spec.mig_profile is not None:
        from dlsched.mig.core import place_mig

        return place_mig(state, job, mask)
    capacity = state.capacity(share)
    extra = state.books_beyond_gpus(job)
    if extra:
        capacity = node_room(state.resources, state.free, state.cluster, spec, share, capacity)
    if need == 1 and len(scores) == 1:
        single = _single_node_score(scores[0][0])
        if single is not None:
            return _place_single(state, single.best_single(capacity, mask), job)
    group = spec.tensor_parallel
    if (group == 1 and not extra and len(scores) == 1 and (take_limit or need) >= need
            and _gpu_chooser(scores) is None):
        # A score that ranks a node holding every worker first names it directly.
        fitting = getattr(scores[0][0], "best_fitting", None)
        if fitting is not None:
            best = fitting(capacity, mask, need)
            if best is not None:
                return _place_on_one(state, best, job, need)
    if group > 1:  # whole tensor-parallel groups per node (JobSpec.tensor_parallel)
        capacity = capacity - capacity % group
        take_limit = None if take_limit is None else max(group, take_limit - take_limit % group)
    usable = mask & (capacity > 0)
    nodes = usable.nonzero()[0]
    room = capacity[nodes]
    have = int(room.sum()) if need > 1 else len(nodes)
    if have < need:
        if share < 1.0 - EPS:
            return (), _no_room_for_share(need, have, share)
        return (), unschedulable("placement", no_room_text(need, have)
                                 + (f" in groups of {group} per node" if group > 1 else ""))
    chosen: list[int] = []
    placed_nodes: list[int] = []
    state.scratch["placing_nodes"] = placed_nodes
    spread = (getattr(scores[0][0], "spread", None) if len(scores) == 1 and group == 1
              and not extra and take_limit is None and _gpu_chooser(scores) is None else None)
    if spread is not None:  # the score's node-by-node picks, told without scoring each step
        node_list = nodes.tolist()
        for position, take in spread(room.tolist(), need):
            best = node_list[position]
            gpus = pick_gpus(state, best, take, share)
            state.take(gpus, share, spec)
            chosen.extend(gpus)
            placed_nodes.append(best)
        return tuple(chosen), SUCCESS
    while len(chosen) < need:
        remaining = need - len(chosen)
        index = 0 if len(nodes) == 1 else int(
            _total_score(state, job, nodes, room, remaining, scores).argmax())
        best = int(nodes[index])
        take = min(remaining, int(room[index]), take_limit or remaining)
        chooser = _gpu_chooser(scores) if not (extra and spec.gpu_memory_gb) else None
        gpus = (chooser(state, job, best, take) if chooser is not None
                else pick_gpus(state, best, take, share, spec.gpu_memory_gb if extra else 0.0))
        state.take(gpus, share, spec)
        chosen.extend(gpus)
        placed_nodes.append(best)
        if len(chosen) >= need:
            break
        room[index] = state.capacity_of(best, share) if not extra else node_room(
            state.resources, state.free, state.cluster, spec, share,
            state.capacity(share))[best]
        if group > 1:
            room[index] -= room[index] % group
        if room[index] <= 0:
            nodes, room = np.delete(nodes, index), np.delete(room, index)
        if len(chosen) < need and not len(nodes):
            state.give_back(chosen, [share] * len(chosen), spec)
            return (), unschedulable("placement", "fragmented: no node combination fits")
    return tuple(chosen), SUCCESS


_NO_SINGLE = unschedulable("placement", NONE_FREE[1])


def _no_room_for_share(need: int, have: int, share: float) -> Status:
    """Why workers of a fraction of a GPU wait: GPUs with that much room, not free GPUs (a job
    of 0.4 beside GPUs with 0.2 left each read "needs 1 GPU, none free")."""
    each = "" if need == 1 else " each"
    return unschedulable("placement", f"needs {count_of(need, 'GPU')} with "
                         f"{share:g} free{each}, {have or 'none'} on fitting nodes")


def _usable_nodes(state: CycleState, job: Job,
                  filters: Sequence[FilterPlugin]) -> tuple[np.ndarray, bool, Status]:
    """The nodes the filters leave the job (the spec's cached mask, or filtered now when the
    cache cannot tell), whether that is every node, and the filters' status."""
    entry = _spec_record(state, job, filters)[4]
    mask, empty, dynamic = entry[:3]
    if empty or dynamic:
        mask, status = filter_nodes(state, job, filters)
        return mask, False, status
    return mask, bool(entry[4]), SUCCESS


def count_fits(state: CycleState, job: Job, filters: Sequence[FilterPlugin],
               take_limit: int | None) -> bool | None:
    """Whether ``place`` would place the job, told from the free-GPU counts: for whole GPUs (no
    shares, MIG slices, tensor-parallel groups or demands beyond GPUs) and no per-node limit,
    placement takes node by node until every worker is placed, so it fails exactly when the
    usable nodes hold fewer wholly free GPUs than the job asks. None: the counts do not tell."""
    spec = job.spec
    if (spec.gpu_share < 1.0 - EPS or spec.mig_profile is not None or spec.tensor_parallel > 1
            or take_limit is not None or state.books_beyond_gpus(job)):
        return None
    need = spec.num_gpus
    if need > state.free_whole:
        return False
    mask, every, status = _usable_nodes(state, job, filters)
    if not status.ok:
        return False
    if every:
        return True
    return int(state.node_free[mask].sum()) >= need


def count_miss(state: CycleState, job: Job, filters: Sequence[FilterPlugin],
               scores: Sequence[tuple[ScorePlugin, float]]) -> Status | None:
    """What ``place`` would answer for a job of whole GPUs that ask for more than the cluster
    has wholly free, told from the free-GPU counts without trying (a preemptive policy tries
    jobs on a full cluster in nearly every cycle); None when that does not settle it (the job
    may fit, or it asks for shares, MIG slices, tensor-parallel groups or more than GPUs)."""
    spec = job.spec
    need = spec.num_gpus
    if (need <= state.free_whole or spec.gpu_share < 1.0 - EPS or spec.mig_profile is not None
            or spec.tensor_parallel > 1 or state.books_beyond_gpus(job)):
        return None
    mask, every, status = _usable_nodes(state, job, filters)
    if not status.ok:
        return status
    if need == 1:  # nothing wholly free: what ``place``'s two paths say
        return _NO_SINGLE
    have = state.free_whole if every else int(state.node_free[mask].sum())
    return unschedulable("placement", no_room_text(need, have))


def _place_single(state: CycleState, best: int | None, job: Job
                  ) -> tuple[tuple[int, ...], Status]:
    """One worker on ``best``, the node the scorer's shortcut ranks first (None: no node of
    the mask has room)."""
    if best is None:
        share = job.spec.gpu_share
        return (), (_no_room_for_share(1, 0, share) if share < 1.0 - EPS else _NO_SINGLE)
    spec = job.spec
    share = spec.gpu_share
    gpus = pick_gpus(state, best, 1, share,
                     spec.gpu_memory_gb if state.books_beyond_gpus(job) else 0.0)
    state.take(gpus, share, spec)
    state.scratch["placing_nodes"] = [best]
    return tuple(gpus), SUCCESS


def _place_on_one(state: CycleState, node: int, job: Job, need: int
                  ) -> tuple[tuple[int, ...], Status]:
    """Every worker on ``node``, which has room for them all (whole GPUs, no group)."""
    share = job.spec.gpu_share
    gpus = pick_gpus(state, node, need, share)
    state.take(gpus, share, job.spec)
    state.scratch["placing_nodes"] = [node]
    return tuple(gpus), SUCCESS


def _total_score(state: CycleState, job: Job, nodes: np.ndarray, capacity: np.ndarray,
                 need: int, scores: Sequence[tuple[ScorePlugin, float]]) -> np.ndarray:
    if len(scores) == 1:
        return scores[0][0].score(state, job, nodes, capacity, need)
    total = np.zeros(len(nodes))
    for plugin, weight in scores:
        total += weight * plugin.score(state, job, nodes, capacity, need)
    return total


def pick_gpus(state: CycleState, node: int, count: int, share: float,
              gpu_memory: float = 0.0) -> list[int]:
    """``count`` GPUs of ``node`` with room for ``share`` (and ``gpu_memory`` GiB of GPU
    memory): inside one NVLink domain when one has room (the fullest such domain, to keep big
    domains free), else the lowest indices; for fractions, the GPUs with the least room left
    that still fit (packing)."""
    layout = state.layout
    first = layout.first_gpu[node]
    end = first + layout.gpus[node]
    domain = layout.nvlink_domain[node]
    if gpu_memory > 0 and state.resources is not None:
        return _pick_with_memory(state, first, end, count, share, gpu_memory)
    if share >= 1.0 - EPS and not domain:
        # The lowest free GPUs, read as Python floats: a node has a handful of GPUs, and this
        # beats building numpy temporaries for them.
        room = share - EPS
        free_list = state.free[first:end].tolist()
        if count == 1:
            for i, f in enumerate(free_list):
                if f >= room:
                    return [first + i]
        return [first + i for i, f in enumerate(free_list) if f >= room][:count]
    free = state.free[first:end]
    fits = np.flatnonzero(free >= share - EPS)
    if share < 1.0 - EPS:
        order = fits[np.argsort(free[fits], kind="stable")]
        return [first + int(i) for i in order[:count]]
    if domain and count <= domain:
        groups = fits // domain
        sizes = np.bincount(groups)
        roomy = np.flatnonzero(sizes >= count)
        if len(roomy):
            group = roomy[int(np.argmin(sizes[roomy]))]
            return [first + int(i) for i in fits[groups == group][:count]]
    return [first + int(i) for i in fits[:count]]


def _pick_with_memory(state: CycleState, first: int, end: int, count: int, share: float,
                      gpu_memory: float) -> list[int]:
    """GPUs with room for both the share and the GPU memory, the least room left first."""
    free = state.free[first:end]
    memory = state.resources.gpu_memory_gb[first:end]  # type: ignore[union-attr]
    fits = np.flatnonzero((free >= share - EPS) & (memory >= gpu_memory - EPS))
    order = fits[np.lexsort((memory[fits], free[fits]))]
    return [first + int(i) for i in order[:count]]


def _gpu_chooser(scores: Sequence[tuple[ScorePlugin, float]]) -> Any:
    """The ``choose_gpus`` hook of a placement's only (or first) score, if it has one."""
    return getattr(scores[0][0], "choose_gpus", None) if scores else None


_SINGLE: dict[type, bool] = {}  # Score class -> whether it offers ``best_single``


def _single_node_score(scorer: ScorePlugin) -> SingleNodeScore | None:
    """The scorer's ``best_single`` hook (hooks.py), looked up once per Score class."""
    kind = type(scorer)
    has = _SINGLE.get(kind)
    if has is None:
        has = _SINGLE[kind] = optional(scorer, SingleNodeScore) is not None
    return scorer if has else None  # type: ignore[return-value]
