"""How the HTML report writes a number: the summary tables and the per-tenant table alike."""

from __future__ import annotations


def display(value: float) -> str:
    """Two decimals from 1 up (hours, percentages); three significant digits below, so a short
    trace does not show every JCT as 0.00. A value that three digits round up to 1 (Jain's
    index 0.99987) is written ``1.00`` like its neighbours, not ``1`` as if exact."""
    if abs(value) >= 1:
        return f"{value:.2f}"
    short = f"{value:.3g}"
    return short if abs(float(short)) < 1 else f"{value:.2f}"
