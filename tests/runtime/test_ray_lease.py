"""The orphan-timeout lease (``ray_lease.OrphanLease``) as a plain object, without a Ray
cluster: ``ray`` is a recorder and ``discover``/``release`` are replaced, so a release can fail
on purpose."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest

from dlsched.runtime.executors import ray_lease
from dlsched.runtime.executors.ray_lease import OrphanLease


def wait_until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


@pytest.fixture
def fake_ray(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    """A ``ray`` whose ``kill`` records what it killed, and a release that fails the first
    ``fake_ray.failures`` times."""
    fake = SimpleNamespace(killed=[], releases=0, failures=1)
    fake.kill = lambda actor, no_restart: fake.killed.append(actor)
    fake.get_runtime_context = lambda: SimpleNamespace(current_actor="lease")

    def release(ray: Any, reservations: list[Any], grace: float) -> None:
        fake.releases += 1
        if fake.releases <= fake.failures:
            raise RuntimeError("placement group removal failed")

    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.setattr(ray_lease, "discover", lambda ray, owner: [])
    monkeypatch.setattr(ray_lease, "release", release)
    monkeypatch.setattr(ray_lease, "CHECK_SECONDS", 0.01)
    return fake


def test_a_failed_release_takes_renewals_again(fake_ray: SimpleNamespace) -> None:
    """It stayed expired and refused every renewal: the service lost its orphan timeout."""
    fake_ray.failures = 10**6
    lease = OrphanLease("dlsched-test", timeout=0.05, grace=0.0)
    wait_until(lambda: fake_ray.releases >= 1)
    wait_until(lambda: lease.renew(60.0, 0.0))  # held again (not while it is releasing)
    assert "placement group removal failed" in (lease.last_release_error() or "")
    assert fake_ray.killed == []
    fake_ray.failures = 0  # the next release succeeds: the lease ends, and its thread
    lease.renew(0.05, 0.0)
    wait_until(lambda: fake_ray.killed == ["lease"])


def test_a_failed_release_is_tried_again_without_a_renewal(fake_ray: SimpleNamespace) -> None:
    lease = OrphanLease("dlsched-test", timeout=0.05, grace=0.0)
    wait_until(lambda: fake_ray.killed == ["lease"])  # released the second time, then ended
    assert fake_ray.releases == 2
    assert lease.last_release_error() is not None


class Handle:
    """An actor handle whose ``h.method.remote(...)`` calls the object at once (the "object
    reference" is the result itself, which ``FakeRay.get`` returns)."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def __getattr__(self, name: str) -> SimpleNamespace:
        return SimpleNamespace(remote=getattr(self.target, name))


def keeper_ray(fake: SimpleNamespace, lease: OrphanLease) -> SimpleNamespace:
    """The ``ray`` a ``LeaseKeeper`` talks to, where ``lease`` is the only lease there is."""
    handle = Handle(lease)
    named = lambda **options: SimpleNamespace(remote=lambda *args: handle)  # noqa: E731

    def get_actor(name: str) -> Handle:
        if "lease" in fake.killed:
            raise ValueError(name)
        return handle

    fake.remote = lambda **options: lambda cls: SimpleNamespace(options=named)
    fake.get = lambda ref, timeout=None: ref
    fake.get_actor = get_actor
    fake.exceptions = SimpleNamespace(RayError=RuntimeError)
    return fake


def test_a_restart_during_a_release_that_fails_holds_the_lease_once_it_failed(
        fake_ray: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """``take_over`` waited for the lease to end, which one whose release failed never does: it
    was killed only after grace + ``RELEASE_SLACK`` s."""
    monkeypatch.setattr(ray_lease, "RELEASE_SLACK", 3.0)
    failing = ray_lease.release
    go = threading.Event()

    def release_when_told(ray: Any, reservations: list[Any], grace: float) -> None:
        go.wait()
        failing(ray, reservations, grace)  # the first one fails

    monkeypatch.setattr(ray_lease, "release", release_when_told)
    lease = OrphanLease("dlsched-test", timeout=1.0, grace=0.0)
    keeper = ray_lease.LeaseKeeper(keeper_ray(fake_ray, lease), timeout=60.0, grace=0.0)
    wait_until(lease.releasing)
    restart = threading.Thread(target=keeper.take_over, args=("dlsched-test",), daemon=True)
    restart.start()
    time.sleep(0.2)
    go.set()
    started = time.monotonic()
    restart.join(timeout=5.0)
    assert not restart.is_alive() and time.monotonic() - started < 2.0
    assert fake_ray.killed == [] and not lease.releasing()
    lease.renew(0.05, 0.0)  # the next release succeeds: the lease ends, and its thread
    wait_until(lambda: fake_ray.killed == ["lease"])
