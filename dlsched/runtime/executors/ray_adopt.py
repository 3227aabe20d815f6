"""Finding a crashed service's Ray workers again (``docs/ray.md``, "Restarts").

The Ray executor reserves each attempt as a *detached* placement group and detached actors,
named after the service and the reservation: ``OWNER-JOB-TOKEN`` for the group and
``OWNER-JOB-TOKEN-rRANK`` for each rank's actor (``OWNER``: ``dlsched-`` and the service's key,
kept in its database, so two services on one Ray cluster never touch each other's). Ray reaps
a driver's ordinary actors when the driver dies, and each worker dies with its actor: before,
a ``kill -9`` of the service ended every Ray attempt, and the restart could only requeue it.
Detached ones outlive the service; the restarted one lists its named actors, asks each which
attempt, process and exit code it has (``WorkerProcess.info``), and recovery (``recovery.py``)
adopts the attempts that still run and were not being stopped, exactly as the local executor
adopts its subprocesses. Everything else of this owner (an attempt being stopped, one that
never started its workers, a group with no actors) is stopped and released before anything
starts: nothing of the old service holds GPUs unseen.
"""

from __future__ import annotations

import contextlib
import re
import signal
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from dlsched.runtime.executors.exit_status import ExitStatus

RANK_SUFFIX = re.compile(r"^(?P<base>.+)-r(?P<rank>\d+)$")
RPC_TIMEOUT = 5.0


@dataclass
class Reservation:
    """One reservation of the old service found in Ray: its group, its actors by rank, and
    the attempt they run (None: no worker started, or an actor did not answer)."""

    name: str
    actors: list[Any]
    group: Any = None
    job_id: str | None = None
    attempt: int | None = None
    pids: dict[int, int] = field(default_factory=dict)  # rank -> pid, ranks still running
    statuses: dict[int, ExitStatus] = field(default_factory=dict)  # ranks that exited

    @property
    def key(self) -> tuple[str, int] | None:
        return None if self.job_id is None or self.attempt is None else (self.job_id,
                                                                        self.attempt)


def discover(ray: Any, owner: str) -> list[Reservation]:
    """Every reservation of ``owner`` that Ray still has, with what its actors report."""
    ranks: dict[str, dict[int, str]] = defaultdict(dict)
    for name in ray.util.list_named_actors():
        match = RANK_SUFFIX.match(name)
        if match is not None and name.startswith(f"{owner}-"):
            ranks[match["base"]][int(match["rank"])] = name
    found = [_reservation(ray, base, by_rank) for base, by_rank in sorted(ranks.items())]
    named = {r.name for r in found}
    found += [Reservation(name, [], group) for name, group in _groups(ray, owner).items()
              if name not in named]
    return found


def _reservation(ray: Any, base: str, by_rank: dict[int, str]) -> Reservation:
    from ray.util import get_placement_group

    actors = []
    for rank in range(max(by_rank) + 1):
        try:
            actors.append(ray.get_actor(by_rank[rank]))
        except (KeyError, ValueError):  # a rank missing or gone: not adoptable
            actors.append(None)
    found = Reservation(base, actors)
    try:
        found.group = get_placement_group(base)
    except (ValueError, ray.exceptions.RayError):
        found.group = None
    if any(actor is None for actor in actors):
        return found
    try:
        infos = ray.get([actor.info.remote() for actor in actors], timeout=RPC_TIMEOUT)
    except ray.exceptions.RayError:
        return found
    _read_infos(found, infos)
    return found


def _read_infos(found: Reservation, infos: list[Any]) -> None:
    """Fill in the attempt when every rank ran a worker of the same one."""
    if any(info is None for info in infos) or len({(i[0], i[1]) for i in infos}) != 1:
        return
    found.job_id, found.attempt = infos[0][0], int(infos[0][1])
    for rank, (_, _, pid, code, asked) in enumerate(infos):
        if code is None:
            found.pids[rank] = int(pid)
        else:
            found.statuses[rank] = ExitStatus(int(code), bool(asked))


def _groups(ray: Any, owner: str) -> dict[str, Any]:
    """This owner's placement groups that Ray has not removed, by name."""
    from ray.util import get_placement_group

    out = {}
    for info in ray.util.placement_group_table().values():
        name = info.get("name") or ""
        if name.startswith(f"{owner}-") and info.get("state") != "REMOVED":
            try:
                out[name] = get_placement_group(name)
            except (ValueError, ray.exceptions.RayError):
                continue  # removed meanwhile
    return out


def release(ray: Any, reservations: list[Reservation], grace: float) -> None:
    """Stop the workers of ``reservations`` (SIGTERM, up to ``grace`` seconds, then SIGKILL),
    kill their actors and remove their groups: their GPUs are free in Ray again."""
    from ray.util.placement_group import remove_placement_group

    actors = [actor for r in reservations for actor in r.actors if actor is not None]
    _signal_all(ray, actors, signal.SIGTERM)
    waits = [actor.wait.remote() for actor in actors]
    if waits:
        ray.wait(waits, num_returns=len(waits), timeout=grace)
    _signal_all(ray, actors, signal.SIGKILL)
    for actor in actors:
        ray.kill(actor, no_restart=True)
    for reservation in reservations:
        if reservation.group is not None:
            with contextlib.suppress(ray.exceptions.RayError):  # removed meanwhile
                remove_placement_group(reservation.group)


def _signal_all(ray: Any, actors: list[Any], signum: signal.Signals) -> None:
    refs = [actor.cleanup.remote() if signum is signal.SIGKILL
            else actor.signal.remote(int(signum)) for actor in actors]
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=RPC_TIMEOUT)


class RayAdoption:
    """The Ray executor's side of a restart (mixed into ``RayExecutor``): what recovery asks
    (``found_workers``, ``found_statuses``, ``adopt``, ``drop_adoption``, ``release_found``)
    and the ``start`` that takes an adopted attempt instead of reserving a new one."""

    ray: Any
    owner: str
    _found: dict[str, Reservation] | None
    _adopting: dict[str, Any]
    _active: dict[str, Any]
    lease: Any  # ray_lease.LeaseKeeper

    def _discovered(self) -> dict[str, Reservation]:
        if self._found is None:
            # First: the old lease must not expire meanwhile, nor be releasing what is found.
            self.lease.take_over(self.owner)
            self._found = {r.name: r for r in discover(self.ray, self.owner)}
        return self._found

    def _found_attempt(self, job_id: str, number: int) -> Reservation | None:
        return next((r for r in self._discovered().values() if r.key == (job_id, number)),
                    None)

    def found_workers(self, job_id: str, number: int) -> dict[int, int]:
        """Rank -> pid of the workers of that attempt still running in Ray."""
        found = self._found_attempt(job_id, number)
        return {} if found is None else dict(found.pids)

    def found_statuses(self, job_id: str, number: int, ranks: int) -> list[ExitStatus | None]:
        """Per rank, the exit status its actor saw (None: running, or unknown)."""
        found = self._found_attempt(job_id, number)
        return [None if found is None else found.statuses.get(rank) for rank in range(ranks)]

    def adopt(self, job_id: str, number: int, gpus: tuple[int, ...], pids: tuple[int, ...],
              log_path: Any) -> None:
        """Take over attempt ``number``'s running actors: the core's next ``start`` of the
        job on these GPUs keeps them instead of reserving new ones."""
        found = self._found_attempt(job_id, number)
        assert found is not None, "recovery adopts only what found_workers reported"
        del self._discovered()[found.name]
        self._adopting[job_id] = (found, gpus, number, log_path)

    def drop_adoption(self, job_id: str) -> None:
        """The core would not take the job back: its actors are released with the rest."""
        entry = self._adopting.pop(job_id, None)
        if entry is not None:
            self._discovered()[entry[0].name] = entry[0]

    def release_found(self, grace: float) -> None:
        """Stop and release everything found that was not adopted (before anything starts)."""
        left = list(self._discovered().values())
        self._found = {}
        release(self.ray, left, grace)

    def _adopted(self, job_id: str, gpus: tuple[int, ...]) -> Any | None:
        """The attempt for ``start`` if this job was adopted on exactly these GPUs."""
        entry = self._adopting.pop(job_id, None)
        if entry is None:
            return None
        found, adopted_gpus, number, log_path = entry
        if adopted_gpus != gpus:
            release(self.ray, [found], 0.0)
            return None
        return self._adopted_attempt(found, gpus, number, log_path)

    def _adopted_attempt(self, found: Reservation, gpus: tuple[int, ...], number: int,
                         log_path: Any) -> Any:
        raise NotImplementedError
