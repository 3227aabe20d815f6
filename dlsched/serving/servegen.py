"""Requests generated from ServeGen's per-client rate traces (Alibaba's ServeGen, 2025,
github.com/alibaba/ServeGen): one header-less CSV per client, one row per 10-minute window:
``start_s, rate (req/s), cv, distribution, param1, param2`` (the last three: the fitted
inter-arrival distribution).

Arrivals of each client and window are a Gamma renewal process with the window's mean rate and
coefficient of variation (AlpaServe's bursty arrival process, Li et al., OSDI'23, §6.1: Gamma
inter-arrivals, shape ``1 / cv^2``); the fitted distribution's name and parameters are read
and checked but not used. Clients are merged. Token counts are drawn, with the same seed, from
another request trace's (prompt, output) pairs: ServeGen's rate files carry no lengths.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dlsched.errors import InputError, InputLocation
from dlsched.serving.requests import RequestTrace
from dlsched.workload.readers.base import iter_headerless_rows

COLUMNS = ("start_s", "rate", "cv", "distribution", "param1", "param2")
WINDOW_SECONDS = 600.0


def client_windows(path: Path) -> list[tuple[float, float, float]]:
    """(start, rate, cv) of each window with requests; a bad value names file:line:field."""
    windows = []
    for ctx in iter_headerless_rows(path, COLUMNS, delimiter=","):
        if ctx.problem is not None:
            raise ctx.fail(ctx.problem_field, ctx.problem)
        start = ctx.number("start_s", minimum=0)
        rate = ctx.number("rate", minimum=0)
        cv = ctx.number("cv", minimum=0)
        assert start is not None and rate is not None and cv is not None
        if rate > 0:
            windows.append((start, rate, cv))
    return windows


def _arrivals(windows: list[tuple[float, float, float]], rng: np.random.Generator,
              until: float, scale: float) -> np.ndarray:
    out = []
    for start, base_rate, cv in windows:
        rate = base_rate * scale
        if start >= until:
            break
        end = min(start + WINDOW_SECONDS, until)
        expected = int(np.ceil(rate * (end - start)))
        if cv <= 0:  # a constant rate
            out.append(start + np.arange(expected) / rate)
            continue
        shape = 1.0 / cv**2
        gaps = rng.gamma(shape, 1.0 / (rate * shape), size=2 * expected + 10)
        times = start + np.cumsum(gaps)
        out.append(times[times < end])
    return np.concatenate(out) if out else np.zeros(0)


def generate(source: str | Path, lengths: RequestTrace, seed: int = 0,
             duration: float = 3600.0, rate_scale: float = 1.0) -> RequestTrace:
    """Requests over the first ``duration`` seconds of a ServeGen client file or of every
    ``*.csv`` client file in a folder, every window's rate times ``rate_scale``."""
    source = Path(source)
    files = sorted(source.glob("*.csv")) if source.is_dir() else [source]
    if not files:
        raise InputError(InputLocation(str(source)), "no ServeGen client files (*.csv)")
    rng = np.random.default_rng(seed)
    arrival = np.sort(np.concatenate([_arrivals(client_windows(f), rng, duration, rate_scale)
                                      for f in files]))
    if len(arrival) == 0:
        raise InputError(InputLocation(str(source)), f"no requests in the first "
                         f"{duration:g} s")
    pick = rng.integers(0, len(lengths), size=len(arrival))
    return RequestTrace(f"servegen-{source.name}", arrival - arrival[0],
                        lengths.prompt[pick], lengths.output[pick])


def looks_like_servegen(path: Path) -> bool:
    """A folder of client files, or a header-less CSV of six columns starting with a number."""
    if path.is_dir():
        return any(path.glob("*.csv"))
    try:
        with path.open(encoding="utf-8") as f:
            first = f.readline().strip().split(",")
    except (OSError, UnicodeDecodeError):
        return False
    return len(first) == len(COLUMNS) and first[0].replace(".", "", 1).isdigit()
