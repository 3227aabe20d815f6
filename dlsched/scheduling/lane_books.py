"""The Tiresias lane's books of free GPUs for one cycle, told by counts (``preempt_lane.py``).

In the lane's case (one pool of whole GPUs: no job asks a fraction, no node has an NVLink domain,
every node is usable) a running job holds its GPUs wholly, so evicting it frees exactly its GPU
count, and a whole job fits exactly when it asks no more than the GPUs wholly free
(``count_fits``). The books keep, for one cycle: the wholly free GPUs per node as bytes
(``node_free``: a node has at most 255 GPUs, so the lowest node with a given count is found by
``find`` in C), their sum (``whole``), and the free share of each GPU of the nodes the cycle
touches (``node_gpus``, read from the core's books at the first touch). ``place`` and ``pick``
are ``placement.place`` with the consolidated score and ``pick_gpus``' plain branch for that
case, ``give_back`` is ``CycleState.evict``'s ``shift_free``, and ``fewest_victims`` is
``cycle._fewest_victims``.

Every share in the lane's case is whole: each job takes 1 of each of its GPUs and gives 1 back
(``gpu_share`` 1: the lane runs only where no fractional job was ever submitted), and the
core's books start at 1 and clamp at 0 and 1 (``Scheduler._adjust_whole``). So a GPU's free
share is exactly 0 or 1: wholly free is ``share == 1``, and a victim's GPU goes from 0 to 1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import compress

from dlsched.scheduling.state import Layout
from dlsched.workload.job import Job


class FreeBooks:
    """A cycle's free GPUs (``begin_books``); ``evicted`` is the scratchpad's (the victim
    search marks its victims there, as ``CycleState.evict`` does, for the candidates read
    lazily against it)."""

    def __init__(self, layout: Layout, largest: int) -> None:
        self.gpu_node, self.first_gpu, self.node_size = (layout.gpu_node, layout.first_gpu,
                                                         layout.gpus)
        self.largest = largest  # the most GPUs a node has
        self.free: memoryview  # the core's free shares, one float a GPU (read only)
        # Each node's GPU ids, for ``_pick``'s ``compress`` over its shares (made once)
        self.node_ids = [range(first, first + size)
                         for first, size in zip(self.first_gpu, self.node_size, strict=True)]

    def begin_books(self, node_free: Sequence[int] | memoryview,
                    evicted: dict[str, Job]) -> None:
        """A cycle's books: the wholly free GPUs per node, as the core's books have them
        (the counts, or a buffer of them as bytes)."""
        self.node_free = bytearray(node_free)
        self.whole = self.whole_before = sum(self.node_free)
        # Each touched node's GPUs' free shares (a cycle touches a few of its nodes).
        self.node_gpus: dict[int, list[float]] = {}
        self.taken: dict[int, int] = {}  # GPUs each node gave to starts (``HandedBooks``)
        # The GPUs that changed hands, in order, with their share after (``HandedBooks``)
        self.moved: list[tuple[tuple[int, ...], float]] = []
        self.marked = evicted

    def _gpus_of(self, node: int) -> list[float]:
        """The node's GPUs' free shares, read from the core's books (first touch)."""
        first = self.first_gpu[node]
        gpus = self.node_gpus[node] = self.free[first:first + self.node_size[node]].tolist()
        return gpus

    def give_back(self, victims: Iterable[Job]) -> None:
        """``shift_free`` of each victim's shares: each of its GPUs goes from 0 free to 1 (every
        share whole, held by the victim alone), the node's whole count kept in step."""
        node_gpus, gpu_node, first_gpu, node_free, moved = (
            self.node_gpus, self.gpu_node, self.first_gpu, self.node_free, self.moved)
        whole = self.whole
        for victim in victims:
            node, shares, first = -1, [], 0
            allocation = victim.allocation
            for gpu in allocation:
                if gpu_node[gpu] != node:
                    node = gpu_node[gpu]
                    shares, first = node_gpus.get(node) or self._gpus_of(node), first_gpu[node]
                shares[gpu - first] = 1.0
                node_free[node] += 1
            moved.append((allocation, 1.0))
            whole += len(allocation)
        self.whole = whole

    # -- placement (``place`` with the consolidated score, every node usable) ------------
    def place(self, need: int) -> tuple[int, ...]:
        """The GPUs ``place`` gives a whole job that fits (``need`` <= ``whole``): the
        tightest node holding it all (``_tightest``, lowest index on ties), else the
        consolidated score's ``spread``: the roomiest node (lowest index on ties) gives all
        it has while none holds the rest, then the tightest node holding the rest takes it
        (a node given all it had has no room left, so it is not met again). ``top`` bounds
        the room any node has: the node count at most, then the room of the roomiest node
        just emptied (rooms above it are not looked for: none has them)."""
        node_free, chosen, remaining = self.node_free, (), need
        find, top = node_free.find, self.largest
        while True:
            for room in range(remaining, top + 1):  # the least room holding the rest
                node = find(room)  # the lowest such node
                if node >= 0:
                    return chosen + self._pick(node, remaining)
            for room in range(min(remaining - 1, top), 0, -1):  # the most room
                node = find(room)
                if node >= 0:
                    chosen += self._pick(node, room)
                    remaining -= room
                    top = room
                    break

    def _pick(self, node: int, count: int) -> tuple[int, ...]:
        """``pick_gpus`` for whole GPUs on a node without NVLink domains (its lowest wholly
        free GPUs), taken: their free share 0 (``take`` of a whole share clamps there)."""
        self.whole -= count
        taken = self.taken
        taken[node] = taken.get(node, 0) + count
        node_free = self.node_free
        room = node_free[node]
        node_free[node] = room - count
        if room == count:  # all it has (the spread's roomiest node, most picks): every
            # free GPU, the ids where the share is 1 (each is 0 or 1: ``compress`` in C),
            # read from the core's books where the cycle has not touched the node
            gpus, ids = self.node_gpus.get(node), self.node_ids[node]
            chosen = tuple(compress(ids, self.free[ids.start:ids.stop] if gpus is None
                                    else gpus))
            self.node_gpus[node] = [0.0] * len(ids)
            self.moved.append((chosen, 0.0))
            return chosen
        gpus = self.node_gpus.get(node) or self._gpus_of(node)
        first = self.first_gpu[node]
        if room == len(gpus):  # every GPU wholly free: the lowest ``count``
            gpus[:count] = [0.0] * count
            chosen = tuple(range(first, first + count))
        else:
            picked, at, position = [], -1, gpus.index
            for _ in range(count):  # the lowest ``count`` wholly free, found in C
                at = position(1.0, at + 1)
                gpus[at] = 0.0
                picked.append(first + at)
            chosen = tuple(picked)
        self.moved.append((chosen, 0.0))
        return chosen

    # -- the victim search (``_fewest_victims`` with ``_enough_room``, every node usable) --
    def fewest_victims(self, need: int, candidates: Iterable[Job]) -> tuple[Job, ...]:
        """Evict candidates in order until the job fits, then give back each victim it does
        not need, the most important first. Told by counts: evicting a running job frees
        exactly its GPU count (giving it back takes them again), so ``_enough_room``'s pass
        and the evictions are one pass, which reads no candidate past the last it evicts
        (``_enough_room`` reads one more: nothing reads it). The candidates are read lazily
        against the marks (``evicted``), as the full cycle's: a candidate is met once, so
        marking after the pass changes none of them. Only the victims kept free their GPUs."""
        if isinstance(candidates, tuple | list) and not candidates:
            return ()
        evicted: list[Job] = []
        whole = self.whole
        for victim in candidates:
            evicted.append(victim)
            whole += len(victim.allocation)
            if whole >= need:
                break
        else:
            return ()  # even all of them leave too little room
        marked = self.marked
        for victim in evicted:
            marked[victim.job_id] = victim
        for victim in list(reversed(evicted[:-1])):
            del marked[victim.job_id]
            whole -= len(victim.allocation)
            if whole < need:
                marked[victim.job_id] = victim
                whole += len(victim.allocation)
            else:
                evicted.remove(victim)
        self.give_back(evicted)  # ``CycleState.evict``: the GPUs given back
        return tuple(evicted)
