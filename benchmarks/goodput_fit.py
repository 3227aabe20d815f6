"""Fit error of the goodput model's iteration time, per application and GPU type.

Usage: python benchmarks/goodput_fit.py [--pollux DIR] [--sia DIR]
(defaults: ../shared/data/profiles/pollux and ../shared/data/profiles/sia beside the repo).
Prints mean/max relative error of the fitted step time against every measured row.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from dlsched.perf.goodput.bundle import FittedParams, fit_pollux_params, fit_sia_params

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "profiles"


def _print(fits: list[FittedParams]) -> None:
    print(f"{'application':<12} {'gpu':<10} {'source':<13} {'rows':>5} {'mean':>7} {'max':>7}")
    for fit in fits:
        e = fit.error
        print(f"{fit.application:<12} {fit.gpu_type:<10} {fit.source:<13} {e.rows:>5} "
              f"{e.mean:>7.1%} {e.max:>7.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pollux", type=Path, default=SHARED / "pollux")
    parser.add_argument("--sia", type=Path, default=SHARED / "sia")
    args = parser.parse_args()
    start = time.perf_counter()
    fits = fit_pollux_params(args.pollux)
    if args.sia.is_dir():
        fits += fit_sia_params(args.sia)
    _print(fits)
    print(f"fitted {len(fits)} models in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
