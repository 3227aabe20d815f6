"""Reactive autoscaling of a service's replicas, with a cold start.

The rule is Kubernetes' Horizontal Pod Autoscaler's (kubernetes.io, "Horizontal Pod
Autoscaling", algorithm details): every ``interval`` seconds, ``desired = ceil(current x
metric / target)``, here with the metric the outstanding requests (queued or running) per
replica; scale-ups act at once, scale-downs take the highest desired count of the last
``stabilization`` seconds (HPA's downscale stabilization window, default 300 s), so a burst's
tail does not remove replicas it will need again. A new replica holds its GPUs from the
decision but serves only after ``cold_start`` seconds (loading the weights: tens of seconds for
a 70B model, ServerlessLLM, Fu et al., OSDI'24, §2). A removed replica takes no new requests
and gives its GPUs back once its last request finishes.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class AutoscalePolicy:
    min_replicas: int = 1
    max_replicas: int = 16
    target_outstanding: float = 16.0
    interval: float = 10.0
    cold_start: float = 60.0
    stabilization: float = 300.0

    def __post_init__(self) -> None:
        if not 1 <= self.min_replicas <= self.max_replicas:
            raise ValueError("need 1 <= min_replicas <= max_replicas")


class Autoscaler:
    """Decides each tick how many replicas a service should have."""

    def __init__(self, policy: AutoscalePolicy) -> None:
        self.policy = policy
        self.next_tick = policy.interval
        self.recent: deque[tuple[float, int]] = deque()  # (tick, desired)

    def desired(self, now: float, current: int, outstanding: int) -> int:
        p = self.policy
        raw = math.ceil(current * (outstanding / max(current, 1)) / p.target_outstanding)
        raw = min(p.max_replicas, max(p.min_replicas, raw))
        self.recent.append((now, raw))
        while self.recent and self.recent[0][0] < now - p.stabilization:
            self.recent.popleft()
        if raw >= current:
            return raw
        return max(raw, min(current, max(d for _, d in self.recent)))
