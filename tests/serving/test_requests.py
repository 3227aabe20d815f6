"""Request trace readers: Azure LLM 2023 CSV and Mooncake JSON lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from serving_helpers import azure_csv

from dlsched.errors import InputError
from dlsched.serving.requests import read_requests

ROWS = ["2023-11-16 18:15:46.6805900,374,44", "2023-11-16 18:15:50.9951690,396,109",
        "2023-11-16 18:15:48.0000000,10,1"]


def test_azure_rows_sorted_and_rebased_to_zero(tmp_path: Path) -> None:
    tr = read_requests(azure_csv(tmp_path / "conv.csv", ROWS))
    assert tr.arrival.tolist() == pytest.approx([0.0, 1.31941, 4.314579])
    assert tr.prompt.tolist() == [374, 10, 396]
    assert tr.output.tolist() == [44, 1, 109]
    assert tr.scaled(2).arrival.tolist() == pytest.approx([0.0, 0.659705, 2.1572895])
    assert len(tr.window(2.0)) == 2


@pytest.mark.parametrize(("row", "where"), [
    ("2023-11-16 18:15:51,abc,3", "conv.csv:3:ContextTokens: not a number: 'abc'"),
    ("2023-11-16 18:15:51,12,0", "conv.csv:3:GeneratedTokens: must be >= 1, got 0"),
    ("yesterday,12,3", "conv.csv:3:TIMESTAMP: not a date-time: 'yesterday'"),
    ("2023-11-16 18:15:51,12", "conv.csv:3:GeneratedTokens: missing"),
], ids=["tokens-not-a-number", "zero-output", "bad-time", "short-row"])
def test_malformed_azure_row_names_file_line_field(tmp_path: Path, row: str,
                                                   where: str) -> None:
    path = azure_csv(tmp_path / "conv.csv", [ROWS[0], row])
    with pytest.raises(InputError) as err:
        read_requests(path)
    assert str(err.value).startswith(str(tmp_path / where))


def test_mooncake_lines(tmp_path: Path) -> None:
    path = tmp_path / "mc.jsonl"
    path.write_text('{"timestamp": 1000, "input_length": 600, "output_length": 5, '
                    '"hash_ids": [1, 2]}\n{"timestamp": 3500, "input_length": 7, '
                    '"output_length": 2, "hash_ids": [3]}\n')
    tr = read_requests(path)
    assert tr.arrival.tolist() == [0.0, 2.5] and tr.prompt.tolist() == [600, 7]
    path.write_text('{"timestamp": 0, "input_length": 6, "output_length": 1}\n'
                    '{"timestamp": 1, "input_length": "x", "output_length": 1}\n')
    with pytest.raises(InputError, match=r"mc.jsonl:2:input_length: not a number"):
        read_requests(path)


def test_unknown_format_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="x.csv:1: unknown request trace format"):
        read_requests(path)
