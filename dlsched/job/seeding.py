"""Seeds derived from names, so every (run seed, rank, step, purpose) gets its own stream."""

from __future__ import annotations

import hashlib
import random


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from ``parts``, e.g. ``derive_seed(seed, "data", step)``; stable across runs,
    machines and Python versions (unlike ``hash``)."""
    text = "\x1f".join(repr(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def seed_python(seed: int) -> None:
    """Seed ``random`` and, when installed, NumPy's global generator."""
    random.seed(seed)
    try:
        import numpy
    except ImportError:
        return
    numpy.random.seed(seed % 2**32)
