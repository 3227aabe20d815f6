"""The rows of ``DIR/reproduce.csv``: one per cell of a paper's headline comparison.

The file's columns are a contract scripts rely on (extend, never rename):
``experiment,case,policy,metric,dlsched,reference,rel_diff,source``.
"""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS: tuple[str, ...] = ("experiment", "case", "policy", "metric", "dlsched", "reference",
                            "rel_diff", "source")


@dataclass(frozen=True)
class Measured:
    """One value dlsched measured: ``case`` names the input (``workload-6@1.0``), ``metric``
    the quantity with its unit (``jct_mean_s``)."""

    case: str
    policy: str
    metric: str
    value: float | None


@dataclass(frozen=True)
class ReproduceRow:
    """A cell: dlsched's value beside the published or artifact one (``None``: no reference
    for this cell, e.g. a variant the paper did not report), and where that one comes from."""

    experiment: str
    case: str
    policy: str
    metric: str
    dlsched: float | None
    reference: float | None
    source: str = ""

    @property
    def rel_diff(self) -> float | None:
        """``dlsched / reference - 1``; ``None`` without both values or with a zero reference."""
        if self.dlsched is None or self.reference is None or self.reference == 0:
            return None
        return self.dlsched / self.reference - 1

    def cells(self, exact: bool = True) -> tuple[str, ...]:
        """The row as CSV cells, in ``COLUMNS`` order (an absent value is an empty cell).
        ``exact``: every number as the shortest text that reads back to the same float, so
        ``rel_diff`` equals ``dlsched / reference - 1`` computed from the file's own cells;
        else six significant digits (the HTML page's table)."""
        number = _exact if exact else _short
        return (self.experiment, self.case, self.policy, self.metric, number(self.dlsched),
                number(self.reference), number(self.rel_diff), self.source)


def _exact(value: float | None) -> str:
    if value is None:
        return ""
    text = repr(float(value))
    return text[:-2] if text.endswith(".0") else text


def _short(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"
