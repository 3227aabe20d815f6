"""Counts in messages read as English: "1 node", "2 nodes" (not "1 nodes")."""

from __future__ import annotations


def count_of(count: float, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, the noun plural (``plural``, else noun + "s") unless the count
    is exactly 1; a float count is written as ``%g`` does."""
    number = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{number} {noun if count == 1 else (plural or noun + 's')}"
