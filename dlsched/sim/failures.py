"""Failures of GPUs and nodes, drawn from a failure model, as events of the simulator.

The built-in model is fitted to Llama 3 405B's pre-training (Llama Team, "The Llama 3 Herd of
Models", 2024, §3.3.4 and Table 5): 419 unexpected interruptions in 54 days on 16,384 H100,
i.e. 4.74e-4 per GPU per day, by root cause: faulty GPU 30.1%, GPU HBM3 memory 17.2%,
software bug 12.9%, network switch or cable 8.4%, host maintenance 7.6%, and 23.8% other
(GPU SRAM, GPU system processor, NIC, NCCL watchdog, silent data corruption, ...). Each
category's rate per GPU is its share of that total. The paper gives no repair times; the
defaults are assumptions (a hardware fault drains the node until it is repaired or swapped:
``repair_hours``; a software bug costs only the restart).

Failures hit a node chosen in proportion to its GPUs; the node is down for the category's
repair time. A failure process is a seeded Poisson process: the same seed gives the same
failures, whatever the policy does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dlsched.cluster.cluster import Cluster
from dlsched.errors import ConfigError, InputError, InputLocation

if TYPE_CHECKING:
    from dlsched.yamlinput import YamlSource

DAY = 86400.0
LLAMA3_INTERRUPTIONS, LLAMA3_GPUS, LLAMA3_DAYS = 419, 16384, 54


@dataclass(frozen=True, slots=True)
class FailureCategory:
    name: str
    rate_per_gpu_day: float
    repair_hours: float  # the node is down this long (0: only the job restarts)

    def __post_init__(self) -> None:
        if not self.rate_per_gpu_day >= 0:
            raise ValueError(f"rate_per_gpu_day must be >= 0, got {self.rate_per_gpu_day}")
        if not self.repair_hours >= 0:
            raise ValueError(f"repair_hours must be >= 0, got {self.repair_hours}")


@dataclass(frozen=True)
class FailureModel:
    name: str
    categories: tuple[FailureCategory, ...]

    @property
    def rate_per_gpu_day(self) -> float:
        return sum(c.rate_per_gpu_day for c in self.categories)

    def mtbf_seconds(self, gpus: int) -> float:
        """Mean time between failures of a job on ``gpus`` GPUs."""
        rate = self.rate_per_gpu_day * gpus / DAY
        return float("inf") if rate == 0 else 1.0 / rate


_LLAMA3_SHARES = (("gpu", 0.301, 24.0), ("hbm3", 0.172, 24.0), ("software", 0.129, 0.0),
                  ("network", 0.084, 4.0), ("host-maintenance", 0.076, 8.0),
                  ("other", 0.238, 12.0))


def llama3_model(scale: float = 1.0) -> FailureModel:
    total = LLAMA3_INTERRUPTIONS / (LLAMA3_GPUS * LLAMA3_DAYS) * scale
    return FailureModel("llama3", tuple(FailureCategory(n, total * s, r)
                                        for n, s, r in _LLAMA3_SHARES))


def resolve_failure_model(name_or_path: str) -> FailureModel:
    """``llama3``, ``llama3xK`` (K times Llama 3's rates, e.g. ``llama3x10``), or a YAML file
    of ``categories: [{name, rate_per_gpu_day, repair_hours}]``."""
    if name_or_path == "llama3":
        return llama3_model()
    if name_or_path.startswith("llama3x"):
        try:
            scale = float(name_or_path[len("llama3x"):])
        except ValueError:
            scale = -1.0
        if not (scale >= 0 and math.isfinite(scale)):
            raise ConfigError(f"failure model {name_or_path!r}: llama3xK needs a finite number "
                              "K >= 0")
        return llama3_model(scale)
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_failure_yaml(path)
    raise ConfigError(f"unknown failure model {name_or_path!r}: llama3, llama3xK or a YAML file")


_CATEGORY_KEYS = {"name": "a cause's name", "rate_per_gpu_day": "failures per GPU-day",
                  "repair_hours": "hours the node is down"}


def load_failure_yaml(path: Path) -> FailureModel:
    from dlsched.cluster.loader import parse_yaml, unknown_key_message

    try:
        text = path.read_text()
    except OSError as exc:
        raise InputError(InputLocation(str(path)), f"cannot read: {exc.strerror}") from None
    doc, src = parse_yaml(text, str(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("categories"), list):
        raise InputError(InputLocation(str(path), 1, "categories"), "a list of categories is "
                         "required")
    for key in doc:
        if key != "categories":
            raise src.error(str(key), unknown_key_message(key, {"categories": None}))
    categories: list[FailureCategory] = []
    for i, raw in enumerate(doc["categories"]):
        category = _category(raw, i, src)
        if any(c.name == category.name for c in categories):
            raise src.error(f"categories[{i}].name", f"'{category.name}' is named twice (each "
                            "cause has its own failures_<name> row)")
        categories.append(category)
    return FailureModel(path.stem, tuple(categories))


def _category(raw: object, index: int, src: YamlSource) -> FailureCategory:
    """``categories[index]``; an unknown key (``repair_hour``) is an error, not a silent
    default."""
    from dlsched.cluster.loader import unknown_key_message
    from dlsched.yamlinput import number_read_as_text

    key = f"categories[{index}]"
    if not isinstance(raw, dict):
        raise src.error(key, "must be a mapping")
    for name in raw:
        if name not in _CATEGORY_KEYS:
            raise src.error(f"{key}.{name}", unknown_key_message(name, _CATEGORY_KEYS))
    values: dict[str, object] = {"name": str(raw.get("name", f"category-{index}"))}
    for field, default in (("rate_per_gpu_day", None), ("repair_hours", 0.0)):
        value = raw.get(field, default)
        if value is None:
            raise src.error(key, f"{field} is required")
        if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
            raise src.error(f"{key}.{field}", f"must be a number >= 0, got {value!r}"
                            f"{number_read_as_text(value, integer=False)}")
        # an infinite rate has no next failure; a repair may take forever (the node is lost)
        if field == "rate_per_gpu_day" and math.isinf(value):
            raise src.error(f"{key}.{field}", f"must be finite, got {value!r}")
        values[field] = float(value)
    return FailureCategory(**values)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ClientFault:
    """A crash of one job's worker process at ``time`` (not of its node): the job goes back to
    its queue, and under MPS the jobs sharing its GPU may go with it
    (``Scheduler.client_fault``, ``InterferenceThroughputs.fault_domain``)."""

    time: float
    job_id: str


@dataclass(frozen=True, slots=True)
class Failure:
    time: float
    node: int
    category: str
    repair_seconds: float


class FailureProcess:
    """Failures of a cluster's nodes in time order: a seeded Poisson process of rate
    (GPUs x rate per GPU); each failure's category by its share of the rate, its node in
    proportion to the nodes' GPUs."""

    def __init__(self, model: FailureModel, cluster: Cluster, seed: int) -> None:
        self.model = model
        self.rng = np.random.default_rng([seed, 0xFA11])
        self.rate = model.rate_per_gpu_day * cluster.num_gpus / DAY  # per second
        self.weights = cluster.node_gpus / max(cluster.num_gpus, 1)
        rates = np.array([c.rate_per_gpu_day for c in model.categories])
        self.shares = rates / rates.sum() if rates.sum() > 0 else rates
        self.time = 0.0

    def next(self) -> Failure | None:
        if self.rate <= 0:
            return None
        self.time += float(self.rng.exponential(1.0 / self.rate))
        node = int(self.rng.choice(len(self.weights), p=self.weights))
        category = self.model.categories[int(self.rng.choice(len(self.shares), p=self.shares))]
        return Failure(self.time, node, category.name, category.repair_hours * 3600.0)
