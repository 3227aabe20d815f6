"""Counts in messages read as English: "1 node", "2 nodes" (not "1 nodes"); durations in
the unit that shows them: "1.6 s", "12.5 min", "2.35 h", "31.88 d"."""

from __future__ import annotations

import math
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


# A duration's unit by its size: (seconds in the unit, its name, decimals, the largest
# value shown in it). One convention for every printed duration of a run (simulate's and
# compare's lines, a trace's recorded figures, the notebook): "45.0 s", "12.5 min",
# "5.07 h", "31.88 d". Hours alone printed "mean JCT 0.00 h" for a service's seconds-long
# jobs, and "makespan 765.09 h" beside "mean total wait 0.0 s" for a month of Philly.
DURATION_UNITS = ((1.0, "s", 1, 60.0), (60.0, "min", 1, 60.0), (3600.0, "h", 2, 48.0),
                  (86400.0, "d", 2, math.inf))


def duration_text(seconds: float | None) -> str:
    """``seconds`` in the unit its size reads best in (``DURATION_UNITS``): seconds below a
    minute, minutes below an hour, hours below two days, days beyond; the unit is chosen on
    the rounded value, so 59.99 s reads "1.0 min", not "60.0 s"."""
    if seconds is None:
        return "n/a"
    for size, unit, decimals, largest in DURATION_UNITS:
        text = f"{seconds / size:.{decimals}f}"
        if abs(float(text)) < largest or unit == "d":
            return f"{text} {unit}"
    raise AssertionError("days take every value")  # unreachable: the last unit is unbounded


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """``; did you mean 'NAME'?`` for the known name most like a mistyped one, or nothing;
    in any case (``--cluster Pollux-64``, ``--trace Philly-Sample`` had no hint)."""
    from difflib import get_close_matches

    folded = {known.casefold(): known for known in sorted(names, reverse=True)}
    close = get_close_matches(name.casefold(), sorted(folded), n=1)
    return f"; did you mean {folded[close[0]]!r}?" if close else ""
