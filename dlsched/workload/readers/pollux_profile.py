"""How long a Pollux/Sia application takes at a fixed size: the work of a ``pollux`` trace job.

Pollux workloads name an application, a GPU count and a global batch size, but no duration:
Pollux's simulator runs a job until its application reaches its final epoch. dlsched turns that
into reference seconds from the Pollux artifact's T4 profiles (``simulator/traces/<app>/``,
Apache-2.0), read either from such a folder or from what the package bundles:

- steps to finish: the last row of ``validation-<batch>.csv`` (epoch ``max_epochs - 1``, Pollux's
  completion epoch). Bundled as ``data/traces/pollux/profile/iterations.csv``, distilled by
  ``write_iterations`` (the validation files themselves are 20x larger).
- seconds per step (``step_time``, which includes ``sync_time``): ``placements.csv`` for replicas
  packed four per node as on Pollux's testbed (``4``, ``24``, ..., ``4444``) and, above 16
  replicas, the fewest-node rows of ``scalability.csv``. Bundled under ``data/profiles/pollux``
  (shared with the ``pollux`` throughput model).
- the largest per-GPU batch before gradient accumulation: the largest measured one, except
  yolov3's 8 (as in Pollux's ``applications.py``).
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

GPUS_PER_NODE = 4  # Pollux's testbed: 16 nodes x 4 T4
_MAX_LOCAL_BSZ = {"yolov3": 8}  # Pollux's applications.py caps yolov3 below its measurements
ITERATIONS_HEADER = ("application", "batch_size", "iterations")


@dataclass(frozen=True)
class StepCurve:
    """Step and sync seconds against the per-GPU batch size, for one app at one scale."""

    local_bsz: tuple[float, ...]
    step_time: tuple[float, ...]
    sync_time: tuple[float, ...]

    def iteration_seconds(self, local_bsz: int, max_local_bsz: int) -> float:
        """One optimizer step at this per-GPU batch. Past ``max_local_bsz`` it takes ``accum``
        extra micro-steps that skip the all-reduce, as in Pollux's ``get_configurations``."""
        accum = math.ceil(local_bsz / max_local_bsz - 1e-8) - 1
        micro = math.ceil(local_bsz / (accum + 1) - 1e-8)
        step = float(np.interp(micro, self.local_bsz, self.step_time))
        sync = float(np.interp(micro, self.local_bsz, self.sync_time))
        return step + (step - sync) * accum


@dataclass(frozen=True)
class PolluxProfile:
    iterations: dict[tuple[str, int], int]
    curves: dict[tuple[str, int], StepCurve]
    max_local_bsz: dict[str, int]

    @property
    def applications(self) -> frozenset[str]:
        return frozenset(self.max_local_bsz)

    def batch_sizes(self, application: str) -> list[int]:
        return sorted(b for app, b in self.iterations if app == application)

    def replica_counts(self, application: str) -> list[int]:
        return sorted(r for app, r in self.curves if app == application)

    def reference_seconds(self, application: str, batch_size: int, replicas: int) -> float:
        """Seconds to train ``application`` to its final epoch on ``replicas`` T4 GPUs (packed
        four per node) at global batch ``batch_size``: steps to finish x seconds per step, the
        job time Pollux's workload generator computes. Pollux's adaptive batch sizes are
        ignored: this is the job as its user submitted it."""
        steps = self.iterations[(application, batch_size)]
        curve = self.curves[(application, replicas)]
        local_bsz = math.ceil(batch_size / replicas - 1e-8)
        return steps * curve.iteration_seconds(local_bsz, self.max_local_bsz[application])


def _data_dir(*parts: str) -> Path:
    return Path(str(resources.files("dlsched.data").joinpath(*parts)))


def bundled_iterations_file() -> Path:
    return _data_dir("traces", "pollux", "profile", "iterations.csv")


@functools.lru_cache(maxsize=4)
def load_profile(profiles_dir: Path | None = None) -> PolluxProfile:
    """The bundled profile, or one from a folder of Pollux's ``<app>/`` profile folders."""
    measured = profiles_dir or _data_dir("profiles", "pollux")
    if profiles_dir is None:
        with open(bundled_iterations_file(), newline="") as f:
            rows = [[r[c] for c in ITERATIONS_HEADER] for r in csv.DictReader(f)]
    else:
        rows = extract_iterations(profiles_dir)
    iterations = {(app, int(batch)): int(steps) for app, batch, steps in rows}
    apps = sorted({app for app, _ in iterations})
    curves = {key: curve for app in apps for key, curve in _curves(measured / app).items()}
    return PolluxProfile(iterations, curves, {app: _max_local(measured / app) for app in apps})


def compact_placement(replicas: int) -> str:
    """Pollux's placement string for ``replicas`` GPUs packed four per node: 6 -> ``"24"``."""
    full, rest = divmod(replicas, GPUS_PER_NODE)
    return (str(rest) if rest else "") + str(GPUS_PER_NODE) * full


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _curves(app_dir: Path) -> dict[tuple[str, int], StepCurve]:
    packed = {compact_placement(n): n for n in range(1, 4 * GPUS_PER_NODE + 1)}
    points = [(packed[r["placement"]], r) for r in _read(app_dir / "placements.csv")
              if r["placement"] in packed]
    large = [r for r in _read(app_dir / "scalability.csv")
             if int(r["num_replicas"]) > 4 * GPUS_PER_NODE]
    fewest: dict[int, int] = {}
    for r in large:
        replicas = int(r["num_replicas"])
        fewest[replicas] = min(fewest.get(replicas, 10**9), int(r["num_nodes"]))
    points += [(int(r["num_replicas"]), r) for r in large
               if int(r["num_nodes"]) == fewest[int(r["num_replicas"])]]
    by_scale: dict[int, list[tuple[float, float, float]]] = {}
    for replicas, r in points:
        by_scale.setdefault(replicas, []).append(
            (float(r["local_bsz"]), float(r["step_time"]), float(r["sync_time"])))
    return {(app_dir.name, n): StepCurve(*map(tuple, zip(*sorted(rows), strict=True)))
            for n, rows in by_scale.items()}


def _max_local(app_dir: Path) -> int:
    largest = max(int(r["local_bsz"]) for r in _read(app_dir / "placements.csv"))
    return _MAX_LOCAL_BSZ.get(app_dir.name, largest)


def extract_iterations(profiles_dir: Path) -> list[list[str]]:
    """``[application, batch_size, iterations]`` rows from Pollux's validation files."""
    rows = []
    for app_dir in sorted(p for p in profiles_dir.iterdir() if p.is_dir()):
        for path in sorted(app_dir.glob("validation-*.csv"),
                           key=lambda p: int(p.stem.split("-")[1])):
            rows.append([app_dir.name, path.stem.split("-")[1], _read(path)[-1]["iteration"]])
    return rows


def write_iterations(profiles_dir: Path, out: Path) -> None:
    """Rebuild the bundled table: ``write_iterations(shared / "profiles/pollux", file)``."""
    with open(out, "w", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(ITERATIONS_HEADER)
        writer.writerows(extract_iterations(profiles_dir))
