"""The orphan timeout of the Ray executor's detached groups and actors (``docs/ray.md``).

Detached placement groups and actors outlive a crashed service so that its restart can adopt
them (``ray_adopt.py``); but a service killed and never restarted would leave its workers
running and their groups holding the GPUs in Ray for good. So each service keeps a *lease*:
one small detached actor named ``lease-OWNER`` (``num_cpus=0``, outside every placement group)
that the service renews about once a second from its loop. If no renewal comes for
``orphan_timeout`` seconds (``dlsched serve --orphan-timeout``), the lease stops every worker of
its owner (SIGTERM, ``grace`` seconds, SIGKILL), kills the actors, removes the groups (the
GPUs are free in Ray again) and then ends itself. A service restarted before that finds the
same lease by name, renews it, and adopts its attempts as before. A service restarted while
an expired lease is still releasing waits until the lease has ended (``take_over``) before it
looks for anything to adopt: otherwise it adopted workers the lease was about to kill (the
attempt then ended ``lost``), and the lease's own search, which lists groups after asking
every actor, could remove a placement group the restart had just made. A release that raises
(a Ray error halfway) is logged and kept (``last_release_error``) and the lease is live again:
renewals are taken (a stalled service, a restart adopt what is left) and, without one, it tries
again after another ``orphan_timeout``. It stayed expired and refused every renewal: the service
kept calling the same stuck lease and had no orphan timeout any more.

Time is measured on the lease's own monotonic clock, so clocks of different machines never
matter. The module imports nothing from Ray at import time (the actor runs on any node).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from dlsched.runtime.executors.ray_adopt import discover, release

RENEW_SECONDS = 1.0  # how often the service renews its lease
CHECK_SECONDS = 0.5  # how often the lease looks at its last renewal
RPC_TIMEOUT = 5.0
# How long a restart waits for an expired lease to end, beyond the grace period: its search
# asks every actor (RPC_TIMEOUT at most per reservation) before the grace period starts.
RELEASE_SLACK = 60.0

log = logging.getLogger("dlsched.runtime")


def lease_name(owner: str) -> str:
    """Not ``OWNER-...``: that prefix is the owner's reservations (``ray_adopt.discover``)."""
    return f"lease-{owner}"


class OrphanLease:
    """A service's lease, inside a detached Ray actor: it releases the owner's groups and
    actors once the service has not renewed it for ``timeout`` seconds."""

    def __init__(self, owner: str, timeout: float, grace: float) -> None:
        self._owner = owner
        self._timeout = timeout
        self._grace = grace
        self._renewed = time.monotonic()
        self._expired = False
        self._release_error: str | None = None
        self._lock = threading.Lock()
        threading.Thread(target=self._watch, daemon=True).start()

    def renew(self, timeout: float, grace: float) -> bool:
        """The service is alive (with these settings); False once the lease has expired: it is
        releasing everything and about to end, so the service must make a new one."""
        with self._lock:
            if self._expired:
                return False
            self._renewed = time.monotonic()
            self._timeout, self._grace = timeout, grace
            return True

    def releasing(self) -> bool:
        """Whether it expired and is releasing (renewals refused until it ends or fails)."""
        with self._lock:
            return self._expired

    def last_release_error(self) -> str | None:
        """What the last failed release raised (also logged), None if none failed."""
        with self._lock:
            return self._release_error

    def _watch(self) -> None:
        import ray

        while True:
            while not self._expire_due():
                time.sleep(CHECK_SECONDS)
            try:
                release(ray, discover(ray, self._owner), self._grace)
            except Exception as exc:  # any error: live again, not stuck expired
                self._rearm(exc)
                continue
            ray.kill(ray.get_runtime_context().current_actor, no_restart=True)
            return

    def _rearm(self, exc: Exception) -> None:
        """After a failed release: log and keep the error, take renewals again, and try again
        after another timeout without one."""
        log.warning("lease of %s: releasing its groups and actors failed: %r (tried again "
                    "after %g s without a renewal)", self._owner, exc, self._timeout)
        with self._lock:
            self._release_error = repr(exc)
            self._renewed = time.monotonic()
            self._expired = False

    def _expire_due(self) -> bool:
        with self._lock:
            self._expired = time.monotonic() - self._renewed > self._timeout
            return self._expired


class LeaseKeeper:
    """The service's side: renews the lease at most every ``RENEW_SECONDS`` (from
    ``RayExecutor.poll``), making it on first use and again if it expired or was lost."""

    def __init__(self, ray: Any, timeout: float, grace: float) -> None:
        self.ray = ray
        self.timeout = timeout
        self.grace = grace
        self._actor_class = ray.remote(num_cpus=0, num_gpus=0, max_concurrency=2)(OrphanLease)
        self._lease: Any = None
        self._renewal: Any = None
        self._next = 0.0

    def renew(self, owner: str) -> None:
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + RENEW_SECONDS
        if self._lease is None or not self._last_renewal_held():
            self._lease = self._actor_class.options(
                name=lease_name(owner), lifetime="detached", get_if_exists=True,
            ).remote(owner, self.timeout, self.grace)
        self._renewal = self._lease.renew.remote(self.timeout, self.grace)

    def take_over(self, owner: str) -> None:
        """At a restart, before the old service's groups and actors are looked up: hold the
        lease now. If it expired and is releasing them, wait until it has ended (it kills
        itself once done; one that has not after ``grace`` + ``RELEASE_SLACK`` s is killed),
        then make a new one: what is found afterwards is not being released by anyone."""
        deadline = time.monotonic() + self.grace + RELEASE_SLACK
        while True:
            lease = self._actor_class.options(
                name=lease_name(owner), lifetime="detached", get_if_exists=True,
            ).remote(owner, self.timeout, self.grace)
            if self._renewed_by(lease, deadline):
                self._lease, self._renewal = lease, None
                self._next = time.monotonic() + RENEW_SECONDS
                return
            self._wait_released(lease_name(owner), deadline)

    def _renewed_by(self, lease: Any, deadline: float) -> bool:
        """Whether ``lease`` took a renewal (a new one may take a while to start)."""
        try:
            return bool(self.ray.get(lease.renew.remote(self.timeout, self.grace),
                                     timeout=max(RPC_TIMEOUT, deadline - time.monotonic())))
        except self.ray.exceptions.RayError:  # it ended meanwhile, or never answered
            return False

    def _wait_released(self, name: str, deadline: float) -> None:
        """Until no actor is called ``name``, or it is no longer releasing (its release failed:
        it takes renewals again); past ``deadline``, kill the one that is."""
        while True:
            try:
                lease = self.ray.get_actor(name)
            except ValueError:
                return
            if not self._releasing(lease):
                return
            if time.monotonic() >= deadline:
                self.ray.kill(lease, no_restart=True)
                deadline = float("inf")
            time.sleep(CHECK_SECONDS)

    def _releasing(self, lease: Any) -> bool:
        try:
            return bool(self.ray.get(lease.releasing.remote(), timeout=RPC_TIMEOUT))
        except self.ray.exceptions.RayError:  # ending, or too busy to answer: still there
            return True

    def _last_renewal_held(self) -> bool:
        """False when the last renewal came back refused or failed (the lease is gone)."""
        if self._renewal is None:
            return True
        ready, _ = self.ray.wait([self._renewal], timeout=0)
        if not ready:
            return True  # still on its way: a slow lease, not a lost one
        try:
            return bool(self.ray.get(self._renewal, timeout=0))
        except self.ray.exceptions.RayError:
            return False

    def end(self) -> None:
        """A clean shutdown released everything itself: the lease is not needed."""
        if self._lease is not None:
            self.ray.kill(self._lease, no_restart=True)
            self._lease = None
