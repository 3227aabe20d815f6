"""Fit the GPU constants of ``hardware.py`` to Vidur's measured profiles (Agrawal et al.,
"Vidur: A Large-Scale Simulation Framework for LLM Inference", MLSys'24; its profiles are
MIT-licensed, in ``shared/data/profiles/inference/vidur``).

- GEMM efficiency: each MLP and attention projection GEMM of the compute profile (columns
  ``time_stats.<op>.median`` in ms, shapes from ``n_embd``, ``n_expanded_embd``, ``n_head``,
  ``n_kv_head``, ``num_tokens``, ``num_tensor_parallel_workers``) gives achieved FLOP/s; the
  fit is ``e * F / (F + F0)`` by least squares over (F, efficiency).
- NVLink all-reduce: rows with every worker on one node (``num_workers == devices_per_node``)
  and messages of at least 8 MiB (``size`` is fp16 elements) give bus bandwidth
  ``2 (n - 1) / n * bytes / time``; its median over the NVLink bandwidth is the fraction.

``python -m dlsched.perf.llm.calibrate DIR`` prints the fitted constants.
"""

from __future__ import annotations

import csv
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

_GEMMS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")


@dataclass(frozen=True)
class GemmFit:
    efficiency: float
    half_flops: float
    points: int


def gemm_points(path: Path, peak_flops: float) -> list[tuple[float, float]]:
    """(FLOPs of one GEMM on one rank, achieved fraction of peak) for each GEMM in the file."""
    points = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            n, t = int(row["num_tokens"]), int(row["num_tensor_parallel_workers"])
            h, ffn = int(row["n_embd"]), int(row["n_expanded_embd"])
            kv = h // int(row["n_head"]) * int(row["n_kv_head"])
            gated = row["use_gated_mlp"] == "True"
            shapes = {"attn_pre_proj": h * (h + 2 * kv), "attn_post_proj": h * h,
                      "mlp_up_proj": h * ffn * (2 if gated else 1), "mlp_down_proj": h * ffn}
            for op in _GEMMS:
                flops = 2.0 * n * shapes[op] / t
                seconds = float(row[f"time_stats.{op}.median"]) * 1e-3
                points.append((flops, flops / seconds / peak_flops))
    return points


def fit_gemm(points: list[tuple[float, float]]) -> GemmFit:
    """Least squares of efficiency = e * F / (F + F0) over a grid of F0 (e is linear)."""
    flops = np.array([p[0] for p in points])
    eff = np.array([p[1] for p in points])
    best = (np.inf, 0.0, 0.0)
    for half in np.geomspace(1e7, 1e11, 400):
        shape = flops / (flops + half)
        e = float(shape @ eff / (shape @ shape))
        error = float(((e * shape - eff) ** 2).sum())
        if error < best[0]:
            best = (error, e, float(half))
    return GemmFit(best[1], best[2], len(points))


def nvlink_bus_fraction(path: Path, nvlink_gbps: float, min_bytes: int = 8 << 20) -> float:
    """Median NCCL all-reduce bus bandwidth inside one node over the NVLink bandwidth."""
    ratios = []
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            n = int(row["num_workers"])
            size = 2 * int(row["size"])  # fp16 elements
            if n < 2 or n != int(row["devices_per_node"]) or size < min_bytes:
                continue
            seconds = float(row["time_stats.all_reduce.median"]) * 1e-3
            ratios.append(2 * (n - 1) / n * size / seconds / 1e9 / nvlink_gbps)
    return float(np.median(ratios))


def main(directory: str) -> None:
    root = Path(directory)
    for gpu, peak, nvlink in (("a100", 312e12, 300.0), ("h100", 989e12, 450.0)):
        for path in sorted(root.glob(f"compute_{gpu}_*_mlp.csv")):
            fit = fit_gemm(gemm_points(path, peak))
            print(f"{path.name}: gemm_efficiency {fit.efficiency:.3f} "
                  f"gemm_half_flops {fit.half_flops:.3g} ({fit.points} GEMMs)")
        network = root / f"network_{gpu}_dgx_all_reduce.csv"
        if network.exists():
            print(f"{network.name}: nvlink_bus_fraction "
                  f"{nvlink_bus_fraction(network, nvlink):.3f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/profiles/inference/vidur")
