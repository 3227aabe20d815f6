"""Small fixed profiles and traces for hand-computed serving tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dlsched.perf.inference.curve import Curve
from dlsched.perf.inference.profile import StepProfile
from dlsched.serving.requests import RequestTrace


def flat_profile(prefill: float = 1.0, decode: float = 0.1) -> StepProfile:
    """Every prefill iteration takes ``prefill`` s, every decode iteration ``decode`` s."""
    return StepProfile("toy", "A100-80G", 1, Curve((1.0, 1e6), (prefill, prefill)),
                       Curve((1.0, 1e3), (decode, decode)), 0.0, 0.0)


def trace(arrival: list[float], prompt: list[int], output: list[int]) -> RequestTrace:
    return RequestTrace("toy", np.array(arrival, dtype=float), np.array(prompt),
                        np.array(output))


def azure_csv(path: Path, rows: list[str]) -> Path:
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    return path
