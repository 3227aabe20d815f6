"""Counts in messages read as English: "1 node", "2 nodes" (not "1 nodes"); durations in
the unit that shows them: "1.6 s", "2.35 h"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def count_of(count: float, noun: str, plural: str | None = None) -> str:
    """``count`` and ``noun``, the noun plural (``plural``, else noun + "s") unless the count
    is exactly 1; a float count is written as ``%g`` does."""
    number = f"{count:g}" if isinstance(count, float) else str(count)
    return f"{number} {noun if count == 1 else (plural or noun + 's')}"


class CountTexts(dict[int, str]):
    """``template`` with ``count_of(count, noun)`` in it, made once per count and kept: for a
    text a hot path writes again and again (a waiting job's reason, once per failed attempt
    under contention), a dict lookup instead of a call that formats the count each time."""

    def __init__(self, template: str, noun: str) -> None:
        super().__init__()
        self.template, self.noun = template, noun

    def __missing__(self, count: int) -> str:
        text = self[count] = self.template.format(count_of(count, self.noun))
        return text


def jobs_ask(count: int) -> str:
    """"1 job asks", "3 jobs ask": the subject of a warning about jobs that can never run."""
    return f"{count_of(count, 'job')} {'asks' if count == 1 else 'ask'}"


def named_counts(counts: Mapping[str, int], noun: str = "job") -> str:
    """"'A100' (2 jobs), 'V100' (1 job)": each name quoted with its count, names sorted."""
    return ", ".join(f"{name!r} ({count_of(count, noun)})"
                     for name, count in sorted(counts.items()))


SHORT_SECONDS = 360.0  # below 0.1 h, hours with two decimals read 0.00 h or 0.05 h


def duration_text(seconds: float | None) -> str:
    """Hours with two decimals (``12.40 h``), or seconds below 0.1 h (``1.6 s``): a replay of
    a service's history of seconds-long jobs printed "mean JCT 0.00 h"."""
    if seconds is None:
        return "n/a"
    if abs(seconds) < SHORT_SECONDS:
        return f"{seconds:.1f} s"
    return f"{seconds / 3600:.2f} h"


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """``; did you mean 'NAME'?`` for the known name most like a mistyped one, or nothing."""
    from difflib import get_close_matches

    close = get_close_matches(name, sorted(names), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
