"""The cycle of an allocation policy (see ``allocation.py``), in numbered steps:

1. the ``AllocatePlugin`` gives a target assignment (a node per worker) for the active jobs;
2. each target is checked: a rigid job gets its requested size or nothing, an elastic one a
   size within its bounds;
3. running jobs without a target are preempted, running jobs with a different one are
   released for a resize, running jobs with the same one keep their GPUs;
4. resized and starting jobs take free GPUs on their target nodes (a resized job first takes
   back the GPUs it held there, so a job that only grows keeps its old workers in place);
5. a target on a node the job's static filters exclude (its GPU types, its pool, a type rated 0
   for it: ``filters.allowed_nodes``, the default profile's filters) is refused: a waiting job
   waits with the reason, a running one is preempted (``_outside``);
6. waiting jobs without a target get a reason (the plugin's own when it defines
   ``reason_for(job_id)``: the tenant layer's quota reasons); those the policy refuses for good
   (its optional ``rejections(state)``: job id -> reason) fail with that reason.

A policy that counts GPUs alone (Gavel, Gandiva, ...) may pick GPUs whose node lacks the CPUs,
host memory or GPU memory a job asks for: such a start is left out this round (the job waits,
with the reason) and such a resize becomes a preemption, where the core would refuse the whole
cycle (``Overbooked``). A layout that puts more workers of a capped group on a node than its
``max_per_node`` is spread instead (``_spread``: the same number of workers on the same GPU
types, the policy's nodes first), and left out only when no spread fits.

Like ``cycle.run_cycle`` it reads a ``ClusterSnapshot`` and returns a ``CycleResult``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from dlsched.errors import DlschedError
from dlsched.scheduling.allocation import AllocatePlugin, Assignment, Targets, worker_bounds
from dlsched.scheduling.decisions import CycleResult, Preempt, Reject, Resize, Start
from dlsched.scheduling.framework import WakeupPlugin
from dlsched.scheduling.hooks import (
    BoundedAllocator,
    optional,
)
from dlsched.scheduling.placement import pick_gpus
from dlsched.scheduling.plugins.filters import allowed_nodes, allows_every_node
from dlsched.scheduling.resources import node_room
from dlsched.scheduling.state import EPS, FULL, ClusterSnapshot, CycleState
from dlsched.slots import slot_builder
from dlsched.wording import count_of
from dlsched.workload.job import Job

_WHOLE = FULL - EPS  # a free share at least this is a whole free GPU (as ``state``'s)
# ``Resize(...)`` and ``Start(...)`` without their frozen ``__init__`` (a round may move most
# running jobs: Gavel's agnostic rounds move ~60 of ~80)
_resize, _start = slot_builder(Resize), slot_builder(Start)


class AllocationError(DlschedError):
    """An allocation policy asked for something impossible (a bug in the policy)."""


def run_allocation_cycle(allocator: AllocatePlugin, snapshot: ClusterSnapshot,
                         wakeups: Sequence[WakeupPlugin] = ()) -> CycleResult:
    state = CycleState.begin(snapshot)
    targets = allocator.allocate(state)
    _check(allocator, state, targets)
    why = _method(allocator, "reason_for")  # ``ExplainingAllocator``
    preemptions: list[Preempt] = []
    moving: list[tuple[Job, Assignment]] = []
    cluster = state.cluster
    changes = type(targets) is Targets
    kept = targets.kept if changes else frozenset()
    placed = changes and targets.placed  # checked by the plugin (``Targets.placed``)
    # GPUs given back and taken on Python lists while no job books more than GPU shares
    # (``_Ledger``); ``sync`` hands the state its arrays before anything else reads them
    ledger = _Ledger(state) if state.resources is None and state.mig is None else None
    # with the ledger and no reasons asked in between, every eviction is booked after the
    # loop, at once (in the same order: the same sums)
    leaving: list[Job] = []
    evict = (state.evict if ledger is None else
             leaving.append if why is None else ledger.evict)
    # a change that keeps every running job (``_check_kept``: they are running) walks none
    walked = () if changes and len(kept) == len(snapshot.running) else snapshot.running
    for job in walked:
        target = targets.get(job.job_id)
        if target is None and job.job_id in kept:
            continue  # keeps what it holds (``Targets``)
        if target is None or not target.nodes:
            if why is not None and ledger is not None:
                ledger.sync()
            preemptions.append(Preempt(job.job_id, _reason(why, job.job_id)
                                       or f"reallocated by {allocator.name}"))
            evict(job)
        elif placed or not target.keeps(job, cluster):
            outside = None if placed else _outside(state, job, target)
            if outside is not None:
                preemptions.append(Preempt(job.job_id, f"[{allocator.name}] {outside}"))
            else:
                moving.append((job, target))
            evict(job)
    if leaving:
        ledger.evict_all(leaving)  # type: ignore[union-attr]
    books = ledger if ledger is not None else state
    spreading: list[tuple[Job, Assignment, str, bool]] = []  # (job, target, why, a resize)
    # with the ledger no GPU is short of CPUs or memory (``_short``): no move spreads
    resizes: list[Resize] = ledger.moves(allocator.name, moving) if ledger is not None else []
    for job, target in (moving if ledger is None else ()):
        taken = _take(allocator.name, state, job, target, job.allocation, books)
        short = _short(state, job, target, taken)
        if short is None:
            resizes.append(_resize(job.job_id, *taken, target.host))
        else:  # spread once every other target has its GPUs
            spreading.append((job, target, short, True))
    starts: list[Start] = []
    reasons: dict[str, str] = {}
    rejections_of = _method(allocator, "rejections")  # ``RejectingAllocator``
    if rejections_of is not None and ledger is not None:
        ledger.sync()
    refused = dict(rejections_of(state)) if rejections_of is not None else {}
    rejections: list[Reject] = []
    # the reason of a waiting job without a target, made once a cycle (Gavel's FIFO rounds:
    # ~9 such jobs a round, ~390 rounds)
    idle = f"[{allocator.name}] no GPUs in this round's allocation"
    for job in snapshot.waiting:
        job_id = job.job_id
        target = targets.get(job_id)
        if refused and job_id in refused and not (target and target.nodes):
            rejections.append(Reject(job_id, f"[{allocator.name}] {refused[job_id]}"))
            continue
        if target is None or not target.nodes:
            reasons[job_id] = (why(job_id) if why is not None else None) or idle
            continue
        outside = None if placed else _outside(state, job, target)
        if outside is not None:
            reasons[job.job_id] = f"[{allocator.name}] {outside}"
            continue
        taken = _take(allocator.name, state, job, target, (), books)
        short = _short(state, job, target, taken)
        if short is None:
            starts.append(_start(job.job_id, *taken, target.host))
        else:
            spreading.append((job, target, short, False))
    if ledger is not None:
        ledger.sync()
    for job, target, short, resized in spreading:
        spread = _spread(state, job, target)
        if spread is not None:
            (resizes if resized else starts).append(
                (Resize if resized else Start)(job.job_id, *spread, target.host))
        elif resized:
            preemptions.append(Preempt(job.job_id, f"[{allocator.name}] {short}"))
        else:
            reasons[job.job_id] = f"[{allocator.name}] {short}"
    asked = [w for p in wakeups if (w := p.next_wakeup(state)) is not None]
    return CycleResult(tuple(starts), tuple(preemptions), reasons,
                       min(asked) if asked else None, resizes=tuple(resizes),
                       rejections=tuple(rejections))


def _method(plugin: object, name: str) -> Callable[..., object] | None:
    """``optional(plugin, hook)`` of a hook of one method (``ExplainingAllocator``,
    ``RejectingAllocator``): that method, or None; without ``optional``'s pass over the
    hook's members (two a cycle: Gavel's FIFO runs ~390 cycles)."""
    found = getattr(plugin, name, None)
    return found if callable(found) else None


class _Ledger:
    """The cycle's free shares and whole-free counts as Python lists while the cycle gives
    GPUs back and takes them (a round of Gavel's agnostic max-min moves ~60 jobs: a numpy
    scalar read and write per GPU cost more than the rest of a move's bookkeeping). Only
    while no job books CPUs, memory or MIG slices (``CycleState.resources`` and ``mig``
    None): then ``CycleState.take``, ``give_back`` and ``evict`` touch nothing else. The
    same float operations, GPU for GPU, as theirs (a float64 read as a Python float and
    written back is the same number). ``sync`` writes the lists back into the state's arrays
    (and its whole-free count); the next change reads them again."""

    __slots__ = ("state", "gpu_node", "free", "node_free", "change")

    def __init__(self, state: CycleState) -> None:
        self.state, self.gpu_node = state, state.layout.gpu_node
        self.free: list[float] | None = None
        self.node_free: list[int] = []
        self.change = 0

    def _lists(self) -> list[float]:
        if self.free is None:
            self.free = self.state.free.tolist()
            self.node_free = self.state.node_free.tolist()
        return self.free

    def sync(self) -> None:
        """The state's arrays as the lists hold them (nothing to do before a change)."""
        if self.free is not None:
            self.state.write_books(self.free, self.node_free, self.change)
            self.free, self.change = None, 0

    def reader(self) -> Callable[[int], float]:
        """Each GPU's free share, read from the list (valid until the next ``sync``)."""
        return self._lists().__getitem__

    def take(self, gpus: Sequence[int], share: float, spec: object = None) -> None:
        """``CycleState.take`` of ``share`` on each GPU (no other resources: see the class)."""
        free, node_free, gpu_node = self._lists(), self.node_free, self.gpu_node
        for gpu in gpus:
            old = free[gpu]
            new = old - share
            new = FULL if new > FULL else (0.0 if new < 0.0 else new)
            free[gpu] = new
            if old >= _WHOLE and new < _WHOLE:
                node_free[gpu_node[gpu]] -= 1
                self.change -= 1
            elif old < _WHOLE and new >= _WHOLE:
                node_free[gpu_node[gpu]] += 1
                self.change += 1

    def moves(self, name: str, moving: Sequence[tuple[Job, Assignment]]) -> list[Resize]:
        """The moved jobs' resizes (the running loop's ``_take`` of each; ``_short`` finds
        nothing: no job books beyond GPUs), a one-worker target's GPU picked and taken here
        as ``_take_one`` picks it (Gavel's agnostic rounds move ~60 such jobs a round: three
        calls and a GPU read through a call each, per move, cost more than the choice)."""
        if not moving:  # (a round that moves no job: the lists are not read)
            return []
        free, node_free, gpu_node = self._lists(), self.node_free, self.gpu_node
        state = self.state
        layout, started = state.layout, state.started
        first, counts = layout.first_gpu, layout.gpus
        resizes = []
        for job, target in moving:
            nodes = target.nodes
            if target.gpus is not None or len(nodes) != 1:
                taken = _take(name, state, job, target, job.allocation, self)
                resizes.append(_resize(job.job_id, *taken, target.host))
                continue
            share = target.share if target.share is not None else job.spec.gpu_share
            least, node, chosen = share - EPS, nodes[0], -1
            for gpu in job.allocation:
                if gpu_node[gpu] == node and free[gpu] >= least:
                    chosen = gpu
                    break
            else:
                start = first[node]
                for gpu in range(start, start + counts[node]):
                    if free[gpu] >= least:
                        chosen = gpu
                        break
            if chosen < 0:
                raise AllocationError(f"{name}: {job.job_id} needs 1 more GPU(s) on node "
                                      f"{node} than are free there")
            old = free[chosen]  # ``take``, inlined
            new = old - share
            new = FULL if new > FULL else (0.0 if new < 0.0 else new)
            free[chosen] = new
            if old >= _WHOLE and new < _WHOLE:
                node_free[node] -= 1
                self.change -= 1
            elif old < _WHOLE and new >= _WHOLE:
                node_free[node] += 1
                self.change += 1
            gpus = started[job.job_id] = (chosen,)
            resizes.append(_resize(job.job_id, gpus, (share,), target.host))
        return resizes

    def evict(self, job: Job) -> None:
        """``CycleState.evict``: the job's GPUs given back, each its share (``shift_free``)."""
        self.evict_all((job,))

    def evict_all(self, jobs: Sequence[Job]) -> None:
        """``evict`` of each job, in order."""
        evicted = self.state.evicted
        free, node_free, gpu_node = self._lists(), self.node_free, self.gpu_node
        change = 0
        for job in jobs:
            evicted[job.job_id] = job
            for gpu, share in zip(job.allocation, job.shares, strict=True):
                old = free[gpu]
                new = old + share
                new = FULL if new > FULL else (0.0 if new < 0.0 else new)
                free[gpu] = new
                was_whole = old >= _WHOLE
                if was_whole != (new >= _WHOLE):
                    step = -1 if was_whole else 1
                    node_free[gpu_node[gpu]] += step
                    change += step
        self.change += change


def _outside(state: CycleState, job: Job, target: Assignment) -> str | None:
    """Why the target puts the job on a node its static filters exclude (``allowed_nodes``:
    its GPU types, its pool, a type rated 0 for it), or None. The core's own cycle never
    offers such a node; a policy that places jobs itself once did (Optimus, AFS, ElasticFlow,
    Sia and Gavel ran a pool-b job on pool a's node), and the start was accepted."""
    if allows_every_node(state, job):
        return None
    allowed = allowed_nodes(state, job)
    for node in target.nodes:
        if not allowed[node]:
            return (f"it was placed on node {state.cluster.nodes[node].name}, outside the "
                    "nodes its GPU types and pool allow; it waits")
    return None


def _short(state: CycleState, job: Job, target: Assignment,
           taken: tuple[tuple[int, ...], tuple[float, ...]]) -> str | None:
    """Why the GPUs just taken for the job overbook its nodes' CPUs, host memory or GPU
    memory (they are given back then), or None. A policy that decides host shares itself
    (``target.host``, Synergy) keeps its own books."""
    book = state.resources
    if book is None or target.host is not None or not job.spec.asks_beyond_gpus:
        return None
    gpus = list(taken[0])
    nodes = book.gpu_node[gpus]
    spec = job.spec
    crowded = spec.max_per_node > 0 and bool(
        (book.groups[spec.density_group][nodes] > spec.max_per_node).any())
    if (not crowded and (book.cpus[nodes] >= -EPS).all()
            and (book.memory_gb[nodes] >= -EPS).all()
            and (book.gpu_memory_gb[gpus] >= -EPS).all()):
        return None
    state.give_back(*taken, spec)
    state.started.pop(job.job_id, None)
    if crowded:
        return (f"the GPUs it was given put more than {count_of(spec.max_per_node, 'worker')} of "
                f"{spec.density_group} on a node; it waits")
    return ("the GPUs it was given lack the CPUs, host memory or GPU memory it asks for on "
            f"node {int(nodes[0])}; it waits")


def _spread(state: CycleState, job: Job, target: Assignment
            ) -> tuple[tuple[int, ...], tuple[float, ...]] | None:
    """For a job whose target broke a per-node limit (its cap, ``JobSpec.max_per_node``, or
    the node's CPUs, host memory or GPU memory; its GPUs already given back by ``_short``),
    once every other target has its GPUs: as many
    workers as the target on nodes of the target's GPU types, as many on each node as its
    free GPUs and every per-node limit allow (``node_room``: the cap, CPUs, memory, GPU
    memory), the target's nodes first, then the others with the most room (ties: the lowest
    index); None (nothing taken) when they do not fit. The policy chose the size and the
    types; only the nodes move, onto GPUs no other job of the round was given."""
    spec, book = job.spec, state.resources
    if book is None or target.host is not None:
        return None
    share = target.share if target.share is not None else spec.gpu_share
    cluster = state.cluster
    room = node_room(book, state.free, cluster, spec, share, state.capacity(share))
    kinds = {int(cluster.node_type[node]) for node in target.nodes}
    mine = set(target.nodes)
    order = sorted((node for node in range(cluster.num_nodes)
                    if int(cluster.node_type[node]) in kinds and room[node] > 0),
                   key=lambda node: (node not in mine, -int(room[node]), node))
    # the policy's size, else the job's own (a policy that widens rigid jobs, as Optimus
    # does, may ask more workers than the cap lets these nodes hold)
    plan = _spread_plan(order, room, target.num_workers)
    if plan is None and spec.num_gpus < target.num_workers:
        plan = _spread_plan(order, room, spec.num_gpus)
    if plan is None:
        return None
    gpus: list[int] = []
    for node, count in plan:
        chosen = pick_gpus(state, node, count, share, spec.gpu_memory_gb)
        state.take(chosen, share, spec)
        gpus.extend(chosen)
    taken = tuple(sorted(gpus))
    state.started[job.job_id] = taken
    return taken, (share,) * len(taken)


def _spread_plan(order: Sequence[int], room: Sequence[int], workers: int
                 ) -> list[tuple[int, int]] | None:
    """(node, workers) filling ``order``'s nodes up to their room, or None if short."""
    plan, left = [], workers
    for node in order:
        count = min(int(room[node]), left)
        plan.append((node, count))
        left -= count
        if not left:
            return plan
    return None


def _reason(why: Callable[[str], str | None] | None, job_id: str) -> str | None:
    return why(job_id) if why is not None else None


def _check(allocator: AllocatePlugin, state: CycleState,
           targets: Mapping[str, Assignment]) -> None:
    name = allocator.name
    num_nodes = state.cluster.num_nodes
    if not isinstance(targets, Mapping):
        raise AllocationError(f"{name}: allocate() returned {type(targets).__name__}, not a "
                              "mapping of job id -> Assignment")
    changes = type(targets) is Targets
    if changes and targets.kept:
        _check_kept(name, state, targets)
    if not targets or (changes and targets.placed):  # none, or vouched for (``placed``)
        return
    active = {job.job_id: job for job in (*state.snapshot.running, *state.snapshot.waiting)}
    # A policy may widen a rigid job's range (Pollux's "every job adapts"): ask it first.
    bounded = optional(allocator, BoundedAllocator)
    bounds = bounded.worker_bounds if bounded is not None else None
    for job_id, target in targets.items():
        job = active.get(job_id)
        if job is None:
            raise AllocationError(f"{name}: allocated GPUs to {job_id}, which is not active")
        if not isinstance(target, Assignment):
            raise AllocationError(f"{name}: allocate() gave {job_id} a {type(target).__name__}, "
                                  "not an Assignment (dlsched.scheduling.allocation)")
        nodes = target.nodes  # sorted (``Assignment``): the first and last bound them all
        if not nodes:
            continue
        workers = len(nodes)
        spec = job.spec
        if bounds is not None:
            low, high = bounds(job)
        elif spec.min_gpus is None and spec.max_gpus is None:  # ``worker_bounds``, rigid
            low = high = spec.num_gpus
        else:
            low, high = worker_bounds(job)
        # a running job may keep the size it runs at: one shrunk by a node failure under
        # ``--resilience elastic/oobleck`` runs below a rigid size (scheduling/reconfigure.py)
        if not low <= workers <= high and workers != len(job.allocation):
            raise AllocationError(f"{name}: gave {job_id} {count_of(workers, 'worker')}, it may "
                                  f"run with {low}..{high}")
        if nodes[0] < 0 or nodes[-1] >= num_nodes:
            raise AllocationError(f"{name}: {job_id} assigned to a node that does not exist")


def _check_kept(name: str, state: CycleState, targets: Targets) -> None:
    """Every job a ``Targets`` keeps is running, and has no target besides."""
    running = state.snapshot.running
    table = getattr(running, "mapping", None)  # the core's live view: its table's keys
    ids = table.keys() if table is not None else {job.job_id for job in running}
    if not targets.kept <= ids:
        raise AllocationError(f"{name}: kept {sorted(set(targets.kept) - set(ids))[:3]}, "
                              "which are not running")
    both = targets.keys() & targets.kept
    if both:
        raise AllocationError(f"{name}: both kept and given a target: {sorted(both)[:3]}")


def _take(name: str, state: CycleState, job: Job, target: Assignment,
          held: tuple[int, ...], books: CycleState | _Ledger | None = None
          ) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Free GPUs on the target nodes, the job's previous GPUs there first (or exactly the
    target's ``gpus`` when it names them). ``books``: where the free shares are read and
    taken (the state, or the cycle's ``_Ledger``)."""
    if books is None or books is state:
        read, take = state.free.item, state.take
    else:
        read, take = books.reader(), books.take
    share = target.share if target.share is not None else job.spec.gpu_share
    if target.gpus is not None:
        return _take_exact(name, state, job, target, share, read, take)
    if len(target.nodes) == 1:
        return _take_one(name, state, job, target.nodes[0], held, share, read, take)
    layout = state.layout
    gpu_node, first, counts = layout.gpu_node, layout.first_gpu, layout.gpus
    wanted = target.per_node()
    previous: Counter[int] = Counter()
    chosen: list[int] = []
    least = share - EPS
    spec = job.spec
    for gpu in held:
        node = gpu_node[gpu]
        if previous[node] < wanted[node] and read(gpu) >= least:
            previous[node] += 1
            chosen.append(gpu)
            take((gpu,), share, spec)
    for node, need in sorted(wanted.items()):
        need -= previous[node]
        start = first[node]
        for gpu in range(start, start + counts[node]):
            if need <= 0:
                break
            if read(gpu) >= least and gpu not in chosen:
                chosen.append(gpu)
                take((gpu,), share, spec)
                need -= 1
        if need > 0:
            raise AllocationError(f"{name}: {job.job_id} needs {need} more GPU(s) on node "
                                  f"{node} than are free there")
    gpus = tuple(sorted(chosen))
    state.started[job.job_id] = gpus
    return gpus, (share,) * len(gpus)


def _take_one(name: str, state: CycleState, job: Job, node: int, held: tuple[int, ...],
              share: float, read: Callable[[int], float],
              take: Callable[..., None]) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """``_take`` for one worker (most jobs): a held GPU on ``node`` with room first, else the
    node's first GPU with room (the same GPU ``_take``'s loops pick)."""
    layout, least = state.layout, share - EPS
    gpu_node = layout.gpu_node
    chosen = None
    # loops, not ``next`` of a generator; Python floats (``read``), not numpy scalars
    for gpu in held:
        if gpu_node[gpu] == node and read(gpu) >= least:
            chosen = gpu
            break
    else:
        start = layout.first_gpu[node]
        for gpu in range(start, start + layout.gpus[node]):
            if read(gpu) >= least:
                chosen = gpu
                break
    if chosen is None:
        raise AllocationError(f"{name}: {job.job_id} needs 1 more GPU(s) on node {node} than "
                              f"are free there")
    take((chosen,), share, job.spec)
    gpus = (chosen,)
    state.started[job.job_id] = gpus
    return gpus, (share,)


def _take_exact(name: str, state: CycleState, job: Job, target: Assignment, share: float,
                read: Callable[[int], float], take: Callable[..., None]
                ) -> tuple[tuple[int, ...], tuple[float, ...]]:
    gpus = target.gpus or ()
    gpu_node = state.layout.gpu_node
    for gpu in gpus:
        if not 0 <= gpu < state.cluster.num_gpus or gpu_node[gpu] not in target.nodes:
            raise AllocationError(f"{name}: {job.job_id} named GPU {gpu}, not on its nodes")
        if read(gpu) < share - EPS:
            raise AllocationError(f"{name}: {job.job_id} named GPU {gpu}, which has "
                                  f"{read(gpu):.2f} free, not {share:.2f}")
        take((gpu,), share, job.spec)
    state.started[job.job_id] = gpus
    return gpus, (share,) * len(gpus)
