"""One attempt of the Ray executor and the Ray objects it holds (``ray.py`` moves it through
its phases; ``docs/ray.md``, "How a gang runs").

An attempt owns one placement group with a bundle per worker, each bundle pinned to the Ray
node of the worker's GPU (``ray.io/node-id`` label selector), and one actor per bundle
(``ray_worker.WorkerProcess``). Ray reserves all bundles or none (gang). Both are detached and
named ``NAME`` and ``NAME-rRANK`` so that a restarted service finds them (``ray_adopt.py``).
What this module does to them: reserve, signal the workers, read their exit codes, release
(kill leftovers, kill the actors, remove the group: its GPUs are free in Ray again).
"""

from __future__ import annotations

import enum
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dlsched.runtime.executors.base import exit_text
from dlsched.runtime.executors.sharing import Sharing

NODE_LABEL = "ray.io/node-id"
RPC_TIMEOUT = 5.0


class Phase(enum.Enum):
    RESERVING = "reserving"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"


@dataclass(eq=False)
class RayAttempt:
    job_id: str
    gpus: tuple[int, ...]
    phase: Phase = Phase.RESERVING
    number: int = 0
    group: Any = None  # the placement group
    actors: list[Any] = field(default_factory=list)
    where: Any = None  # rank 0's node(): (node id, address, port)
    pid_refs: list[Any] = field(default_factory=list)
    exit_refs: list[Any] = field(default_factory=list)
    codes: dict[int, int | None] = field(default_factory=dict)  # rank -> code (None: lost)
    lost: dict[int, str] = field(default_factory=dict)
    log_path: Path | None = None
    launched: bool = False
    kill_at: float | None = None
    sharing: Sharing | None = None  # a fractional, MIG or CPU-asking job's (sharing.py)

    def exited(self) -> bool:
        return len(self.codes) == len(self.gpus)

    def first_failure(self) -> tuple[int, int | None] | None:
        """The lowest rank that exited with a code other than 0 or was lost, and its code."""
        return next(((r, c) for r, c in sorted(self.codes.items()) if c != 0), None)

    def failure_text(self, rank: int, code: int | None) -> str:
        if code is None:
            return f"rank {rank} was lost ({self.lost.get(rank, 'its actor died')})"
        return f"rank {rank} {exit_text(code)}"

    # -- its Ray objects ------------------------------------------------------------------
    def reserve(self, actor_class: Any, name: str, node_ids: list[str]) -> None:
        """Ask Ray for the placement group and one actor per bundle; nothing waits here."""
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        bundle = {"GPU": 1} if self.sharing is None else self.sharing.ray_bundle()
        # Detached and named: they outlive a crashed service, whose restart finds them.
        self.group = placement_group(
            [bundle for _ in node_ids], strategy="PACK", name=name, lifetime="detached",
            bundle_label_selector=[{NODE_LABEL: node_id} for node_id in node_ids])
        self.actors = [
            actor_class.options(name=f"{name}-r{index}", lifetime="detached",
                                scheduling_strategy=PlacementGroupSchedulingStrategy(
                                    self.group, placement_group_bundle_index=index)).remote()
            for index in range(len(node_ids))]
        self.where = self.actors[0].node.remote()

    def signal(self, signum: signal.Signals) -> None:
        """To every worker's process group (none yet while reserving)."""
        if self.phase is not Phase.RESERVING:
            for actor in self.actors:
                actor.signal.remote(int(signum))

    def collect_exits(self, ray: Any) -> None:
        """Read the exit code of every rank whose ``wait`` has answered (None: actor lost)."""
        waiting = [(rank, ref) for rank, ref in enumerate(self.exit_refs)
                   if rank not in self.codes]
        if not waiting:
            return
        ready, _ = ray.wait([ref for _, ref in waiting], num_returns=len(waiting), timeout=0)
        for rank, ref in waiting:
            if ref in ready:
                try:
                    self.codes[rank] = int(ray.get(ref, timeout=RPC_TIMEOUT))
                except ray.exceptions.RayError as exc:
                    self.codes[rank] = None
                    self.lost[rank] = cause(exc)

    def release(self, ray: Any) -> None:
        """Kill what the workers left behind, then the actors, then free the GPUs in Ray."""
        from ray.util.placement_group import remove_placement_group

        if self.phase is not Phase.RESERVING:
            refs = [actor.cleanup.remote() for actor in self.actors]
            ray.wait(refs, num_returns=len(refs), timeout=RPC_TIMEOUT)
        for actor in self.actors:
            ray.kill(actor, no_restart=True)
        if self.group is not None:
            remove_placement_group(self.group)
            self.group = None


def all_ready(ray: Any, refs: list[Any]) -> bool:
    """Whether every one of ``refs`` has answered (without waiting)."""
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0)
    return len(ready) == len(refs)


def cause(exc: Exception) -> str:
    """A Ray error in one line: its type and the last line of its text."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".rstrip(": ")
