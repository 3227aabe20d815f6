"""Published and artifact numbers (``published.csv``), each with its citation.

Columns: ``experiment,case,policy,metric,value,source``. ``source`` says exactly where the
number comes from (paper and table or figure, or the artifact file it was computed from); a
row without one is an error, as is a duplicate key.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from dlsched.errors import InputError, InputLocation

FIELDS = ("experiment", "case", "policy", "metric", "value", "source")
Key = tuple[str, str, str, str]


@dataclass(frozen=True)
class Reference:
    value: float
    source: str


def published_path() -> Path:
    return Path(str(resources.files("dlsched.reproduce").joinpath("published.csv")))


@cache
def published() -> dict[Key, Reference]:
    """The bundled reference numbers by ``(experiment, case, policy, metric)``."""
    return read_published(published_path())


def read_published(path: Path) -> dict[Key, Reference]:
    with path.open(newline="") as handle:
        rows = [r for r in csv.reader(handle) if r and not r[0].startswith("#")]
    if not rows or tuple(rows[0]) != FIELDS:
        raise InputError(InputLocation(str(path), 1), f"expected the header {','.join(FIELDS)}")
    table: dict[Key, Reference] = {}
    for line, row in enumerate(rows[1:], start=2):
        key, reference = _parse(path, line, row)
        if key in table:
            raise InputError(InputLocation(str(path), line), f"duplicate reference {key}")
        table[key] = reference
    return table


def _parse(path: Path, line: int, row: list[str]) -> tuple[Key, Reference]:
    if len(row) != len(FIELDS):
        raise InputError(InputLocation(str(path), line),
                         f"expected {len(FIELDS)} fields, got {len(row)}")
    experiment, case, policy, metric, value, source = (cell.strip() for cell in row)
    for name, cell in zip(FIELDS, (experiment, case, policy, metric), strict=False):
        if not cell:
            raise InputError(InputLocation(str(path), line, name), "empty")
    try:
        number = float(value)
    except ValueError:
        raise InputError(InputLocation(str(path), line, "value"),
                         f"not a number: {value!r}") from None
    if not source:
        raise InputError(InputLocation(str(path), line, "source"),
                         "every reference number cites where it comes from")
    return (experiment, case, policy, metric), Reference(number, source)
