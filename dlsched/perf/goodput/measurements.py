"""Measured step times to fit the iteration-time model on: Pollux and Sia profile files.

Pollux's artifact (``simulator/traces/<app>/``, T4) and Sia's (``<app>/placements-<cluster>.csv``,
``scalability-<cluster>.csv``, ``seed-1gpu-profiles/<app>.csv``) share columns, in varying order:
``placement`` (a digit string of GPUs per node, ``22`` = 2 nodes × 2 GPUs) or ``num_nodes`` and
``num_replicas``; ``local_bsz``; ``step_time`` and ``sync_time`` (seconds). Compute time is
``step_time − sync_time`` (Pollux §3.2 fits the two separately).

Sia names its profiles by cluster; the GPU type of each (``SIA_CLUSTER_GPU``) follows the Sia
artifact's cluster configurations and ``shared/data/SOURCES.md``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from dlsched.errors import InputError, InputLocation

# Sia profile suffix -> GPU type name (dlsched/cluster/gpu_types.py). ``dgx-ext`` is listed
# before ``dgx`` for A100: it holds more multi-node measurements.
SIA_CLUSTER_GPU = {
    "aws": "T4",
    "azure": "V100",
    "dgx-ext": "A100",
    "dgx": "A100",
    "quad": "RTX6000",
    "rtx": "RTX2080Ti",
}
# seed-1gpu-profiles name GPU types by another set of names
SIA_SEED_GPU = {"t4": "T4", "v100": "V100", "dgx": "A100", "quad": "RTX6000", "rtx": "RTX2080Ti"}


@dataclass(frozen=True)
class StepMeasurements:
    """Measured step times, one entry per row: the arrays are aligned."""

    num_nodes: NDArray[np.int64]
    num_replicas: NDArray[np.int64]
    local_bsz: NDArray[np.float64]
    step_time: NDArray[np.float64]
    sync_time: NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.step_time)

    @property
    def grad_time(self) -> NDArray[np.float64]:
        """Measured compute seconds: the step less its synchronization."""
        return self.step_time - self.sync_time

    @classmethod
    def concat(cls, parts: list[StepMeasurements]) -> StepMeasurements:
        arrays = [np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS]
        return cls(*arrays)


_FIELDS = ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time")


def read_steps(path: Path, gpu_filter: str | None = None) -> StepMeasurements:
    """One placements/scalability/seed file; ``gpu_filter`` keeps seed rows of that GPU name."""
    rows: list[tuple[int, int, float, float, float]] = []
    with open(path, newline="") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            if gpu_filter is not None and row.get("gpu_type") != gpu_filter:
                continue
            rows.append(_parse_row(path, line, row))
    if not rows and gpu_filter is None:
        raise InputError(InputLocation(str(path)), "no step-time rows")
    columns = list(zip(*rows, strict=True)) or [()] * 5
    return StepMeasurements(
        np.asarray(columns[0], dtype=np.int64),
        np.asarray(columns[1], dtype=np.int64),
        *(np.asarray(c, dtype=float) for c in columns[2:]),
    )


def _parse_row(path: Path, line: int, row: dict[str, str]) -> tuple[int, int, float, float, float]:
    def number(field: str) -> float:
        try:
            value = float(row[field])
        except (KeyError, TypeError, ValueError):
            raise InputError(InputLocation(str(path), line, field),
                             f"expected a number, got {row.get(field)!r}") from None
        if not np.isfinite(value) or value < 0:
            raise InputError(InputLocation(str(path), line, field), f"bad value {value}")
        return value

    if "placement" in row:
        digits = (row["placement"] or "").strip()
        if not digits.isdigit() or "0" in digits:
            raise InputError(InputLocation(str(path), line, "placement"),
                             f"expected digits 1-9 (GPUs per node), got {digits!r}")
        nodes, replicas = len(digits), sum(map(int, digits))
    else:
        nodes, replicas = int(number("num_nodes")), int(number("num_replicas"))
    step, sync = number("step_time"), number("sync_time")
    if sync >= step:
        raise InputError(InputLocation(str(path), line, "sync_time"),
                         f"sync_time {sync} is not below step_time {step}")
    return nodes, replicas, number("local_bsz"), step, sync


def pollux_measurements(app_dir: Path) -> StepMeasurements:
    """Pollux's ``placements.csv`` and ``scalability.csv`` of one application (T4)."""
    return StepMeasurements.concat(
        [read_steps(app_dir / "placements.csv"), read_steps(app_dir / "scalability.csv")]
    )


def sia_measurements(sia_dir: Path, app: str, cluster: str) -> StepMeasurements:
    """Sia's files of one application on one cluster, plus its 1-GPU seed rows there."""
    parts = [read_steps(sia_dir / app / f"{kind}-{cluster}.csv")
             for kind in ("placements", "scalability")
             if (sia_dir / app / f"{kind}-{cluster}.csv").exists()]
    seed = sia_dir / "seed-1gpu-profiles" / f"{app}.csv"
    seed_name = {v: k for k, v in SIA_SEED_GPU.items()}.get(SIA_CLUSTER_GPU[cluster])
    if seed.exists() and seed_name is not None:
        seed_rows = read_steps(seed, gpu_filter=seed_name)
        if len(seed_rows):
            parts.append(seed_rows)
    if not parts:
        raise InputError(InputLocation(str(sia_dir / app)), f"no profile for cluster {cluster}")
    return StepMeasurements.concat(parts)
