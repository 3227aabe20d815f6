"""Checkpoint intervals and their cost.

Writing a checkpoint of ``S`` bytes at ``B`` bytes/s stalls training ``delta = S / B``
seconds. With mean time between failures ``M``:

- Young ("A first order approximation to the optimum checkpoint interval", CACM 1974):
  ``tau = sqrt(2 delta M)``.
- Daly ("A higher order estimate of the optimum checkpoint interval for restart dumps",
  FGCS 2006, eq. 37): ``tau = sqrt(2 delta M) (1 + sqrt(delta / 2M) / 3 + delta / 18M) -
  delta`` for ``delta < 2M``, else ``M``.
- Adaptive: Young's rule on the failure rate observed so far (failures per GPU-second of the
  running jobs), starting from the model's rate; the interval follows the cluster as it is.
- A fixed interval.

A rule's interval for checkpoints that cost nothing (``delta`` = 0, ``--checkpoint-cost 0``)
is 0: the job checkpoints continuously and a failure loses no work.

Between failures a job spends ``delta`` of every ``tau + delta`` seconds checkpointing; a
failure loses the work since the last completed checkpoint, and the restart costs the core's
restart overhead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dlsched.errors import ConfigError

RULES = ("young", "daly", "adaptive")


def young(delta: float, mtbf: float) -> float:
    return math.sqrt(2.0 * delta * mtbf)


def daly(delta: float, mtbf: float) -> float:
    if delta >= 2.0 * mtbf:
        return mtbf
    ratio = delta / (2.0 * mtbf)
    return math.sqrt(2.0 * delta * mtbf) * (1 + math.sqrt(ratio) / 3 + ratio / 9) - delta


@dataclass(frozen=True, slots=True)
class CheckpointPlan:
    """``interval``: "young", "daly", "adaptive" or seconds; ``cost_seconds``: delta for jobs
    that do not declare a model (LLM jobs: their checkpoint size over ``storage_gbps``)."""

    interval: str | float = "young"
    cost_seconds: float = 60.0
    storage_gbps: float = 100.0  # GB/s of the checkpoint store, all writers together

    def __post_init__(self) -> None:
        if isinstance(self.interval, str):
            if self.interval not in RULES:
                raise ConfigError(f"checkpoint interval {self.interval!r}: one of "
                                  f"{', '.join(RULES)} or seconds > 0")
        elif not self.interval > 0:
            raise ConfigError(f"checkpoint interval must be > 0 seconds, got {self.interval}")
        if not self.cost_seconds >= 0:
            raise ConfigError(f"checkpoint cost must be >= 0 seconds, got {self.cost_seconds}")

    def interval_for(self, delta: float, mtbf: float) -> float:
        """Seconds of training between two checkpoints."""
        if not isinstance(self.interval, str):
            return float(self.interval)
        if delta <= 0:
            return 0.0  # free checkpoints: Young's interval tends to 0, nothing is ever lost
        if math.isinf(mtbf):
            return math.inf
        return daly(delta, mtbf) if self.interval == "daly" else young(delta, mtbf)


def parse_interval(value: object) -> str | float:
    """A run file's or flag's checkpoint interval: a rule name or seconds > 0."""
    if isinstance(value, str) and value in RULES:
        return value
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"must be one of {', '.join(RULES)} or seconds > 0, got "
                          f"{value!r}") from None
    if not seconds > 0:
        raise ConfigError(f"must be > 0 seconds, got {value!r}")
    return seconds


def efficiency(interval: float, delta: float) -> float:
    """Share of running time that trains (the rest writes checkpoints)."""
    from dlsched.scheduling.resilience import _efficiency

    return _efficiency(interval, delta)
