"""Request traces: arrival time, prompt tokens and output tokens of every request.

Readers: the Azure LLM inference traces of 2023 (``AzureLLMInferenceTrace_code.csv`` and
``_conv.csv``: ``TIMESTAMP,ContextTokens,GeneratedTokens``; Patel et al., Splitwise, ISCA'24)
and Mooncake's JSON lines (``timestamp`` in ms, ``input_length``, ``output_length``,
``hash_ids``; Qin et al., FAST'25). Every bad value is an ``InputError`` naming file, line and
field. Times start at 0 at the first request; ``scaled(k)`` divides them by ``k`` (k times
the rate, the same requests).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dlsched.errors import InputError, InputLocation
from dlsched.textinput import read_text
from dlsched.workload.readers.base import RowContext, date_time, first_line, iter_csv_rows

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")


@dataclass(frozen=True)
class RequestTrace:
    """Requests sorted by arrival (seconds from the first); token counts are >= 1."""

    name: str
    arrival: np.ndarray  # float64 seconds
    prompt: np.ndarray  # int64 tokens
    output: np.ndarray  # int64 tokens
    prefix: tuple[tuple[int, ...], ...] | None = None  # 512-token prefix block hashes

    def __len__(self) -> int:
        return len(self.arrival)

    @property
    def duration(self) -> float:
        return float(self.arrival[-1]) if len(self) else 0.0

    def scaled(self, rate: float) -> RequestTrace:
        """The same requests arriving ``rate`` times as fast."""
        if rate == 1:
            return self
        return RequestTrace(f"{self.name}x{rate:g}", self.arrival / rate, self.prompt,
                            self.output, self.prefix)

    def window(self, seconds: float) -> RequestTrace:
        """The requests of the first ``seconds``."""
        n = int(np.searchsorted(self.arrival, seconds, side="left"))
        return RequestTrace(self.name, self.arrival[:n], self.prompt[:n], self.output[:n],
                            None if self.prefix is None else self.prefix[:n])

    @classmethod
    def of(cls, name: str, arrival: list[float], prompt: list[int], output: list[int],
           prefix: list[tuple[int, ...]] | None = None) -> RequestTrace:
        t = np.asarray(arrival, dtype=float)
        order = np.argsort(t, kind="stable")
        t = t[order] - (t.min() if len(t) else 0.0)
        return cls(name, t, np.asarray(prompt, dtype=np.int64)[order],
                   np.asarray(output, dtype=np.int64)[order],
                   None if prefix is None else tuple(prefix[i] for i in order))


def _tokens(ctx: RowContext, field: str) -> int:
    value = ctx.integer(field, minimum=1)
    assert value is not None
    return value


def read_azure_llm(path: str | Path) -> RequestTrace:
    """An Azure LLM inference trace (2023 or a file with its three columns)."""
    path = Path(path)
    arrival, prompt, output = [], [], []
    for ctx in iter_csv_rows(path, AZURE_COLUMNS):
        if ctx.problem is not None:
            raise ctx.fail(ctx.problem_field, ctx.problem)
        arrival.append(date_time(ctx, "TIMESTAMP"))
        prompt.append(_tokens(ctx, "ContextTokens"))
        output.append(_tokens(ctx, "GeneratedTokens"))
    if not arrival:
        raise InputError(InputLocation(str(path)), "no requests in the trace")
    return RequestTrace.of(path.stem, arrival, prompt, output)


def read_mooncake(path: str | Path) -> RequestTrace:
    """A Mooncake trace: one JSON object a line (``timestamp`` ms, ``input_length``,
    ``output_length``, ``hash_ids``: the prompt's 512-token prefix blocks, for prefix reuse)."""
    path = Path(path)
    arrival, prompt, output, prefix = [], [], [], []
    for line_no, text in enumerate(read_text(path).splitlines(), start=1):
        if not text.strip():
            continue
        try:
            row = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(InputLocation(str(path), line_no), f"not JSON: {exc.msg}") from None
        if not isinstance(row, dict):
            raise InputError(InputLocation(str(path), line_no), "expected a JSON object")
        arrival.append(_json_number(row, "timestamp", path, line_no, 0) / 1e3)
        prompt.append(int(_json_number(row, "input_length", path, line_no, 1)))
        output.append(int(_json_number(row, "output_length", path, line_no, 1)))
        prefix.append(_hashes(row, path, line_no))
    if not arrival:
        raise InputError(InputLocation(str(path)), "no requests in the trace")
    return RequestTrace.of(path.stem, arrival, prompt, output, prefix)


def _hashes(row: dict, path: Path, line: int) -> tuple[int, ...]:
    value = row.get("hash_ids", [])
    if not isinstance(value, list) or not all(
            isinstance(h, int) and not isinstance(h, bool) for h in value):
        raise InputError(InputLocation(str(path), line, "hash_ids"),
                         "expected a list of integers")
    return tuple(value)


def _json_number(row: dict, field: str, path: Path, line: int, minimum: float) -> float:
    value = row.get(field)
    where = InputLocation(str(path), line, field)
    if value is None:
        raise InputError(where, "missing value")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(where, f"not a number: {value!r}")
    if value < minimum:
        raise InputError(where, f"must be >= {minimum:g}, got {value}")
    return float(value)


def read_requests(path: str | Path) -> RequestTrace:
    """A request trace, its format told by its first line (Azure CSV header or JSON)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(InputLocation(str(path)), "no such request trace file")
    head = first_line(path).strip()
    if head.startswith("{"):
        return read_mooncake(path)
    if head.split(",")[0].strip() == "TIMESTAMP":
        return read_azure_llm(path)
    raise InputError(InputLocation(str(path), 1), "unknown request trace format (expected the "
                     "Azure LLM CSV header TIMESTAMP,ContextTokens,GeneratedTokens or Mooncake "
                     "JSON lines)")
