"""Run files: contents, determinism and the optional Parquet format."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest
from report_builders import CONTRACT_KEYS, ELASTIC_KEYS, FAIRNESS_KEYS, run_tiny

from dlsched.report.metrics import TIMING_KEYS
from dlsched.report.output import (
    JOB_COLUMNS,
    RUN_COLUMNS,
    TIMELINE_COLUMNS,
    ParquetUnavailable,
    deterministic_view,
    write_run,
)

DETERMINISTIC_FILES = ("jobs.csv", "timeline.csv", "run.json")


def _read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("policy", ["fifo", "tiresias"])
def test_same_run_gives_identical_files(tmp_path: Path, policy: str) -> None:
    write_run(run_tiny(policy), tmp_path / "one")
    write_run(run_tiny(policy), tmp_path / "two")
    for name in DETERMINISTIC_FILES:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    one, two = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("one", "two"))
    assert deterministic_view(one) == deterministic_view(two)
    assert not set(TIMING_KEYS) & set(deterministic_view(one))


def test_summary_json_is_sorted_with_contract_keys(tmp_path: Path) -> None:
    write_run(run_tiny("fifo"), tmp_path)
    text = (tmp_path / "summary.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert set(data) == CONTRACT_KEYS | FAIRNESS_KEYS | ELASTIC_KEYS
    assert list(data) == sorted(data)
    assert text.endswith("}\n") and "NaN" not in text
    assert data["jct_mean"] == pytest.approx(117.25)


def test_jobs_csv_rows_in_submit_order(tmp_path: Path) -> None:
    write_run(run_tiny("fifo"), tmp_path)
    rows = _read_csv(tmp_path / "jobs.csv")
    assert list(rows[0]) == [*JOB_COLUMNS, *RUN_COLUMNS]
    assert [r["job_id"] for r in rows] == ["a", "b", "c", "d"]
    assert rows[3]["jct"] == "112.000000" and rows[3]["queueing_delay"] == "107.000000"
    assert {(r["policy"], r["trace"], r["cluster"], r["seed"], r["version"]) for r in rows} == {
        ("fifo", "tiny", "two-nodes", "0", "0.1.0")}


def test_timeline_csv_and_run_json(tmp_path: Path) -> None:
    result = run_tiny("fifo")
    write_run(result, tmp_path)
    rows = _read_csv(tmp_path / "timeline.csv")
    assert list(rows[0]) == [*TIMELINE_COLUMNS, *RUN_COLUMNS]
    assert len(rows) == len(result.timeline.times)
    assert (rows[-1]["time"], rows[-1]["used_gpus"]) == ("150.000000", "0.000000")
    run = json.loads((tmp_path / "run.json").read_text())
    assert run == {"policy": "fifo", "trace": "tiny", "cluster": "two-nodes", "seed": 0,
                   "version": "0.1.0", "policy_options": {}, "placement": "consolidated",
                   "restart_overhead": 0.0}


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown output format"):
        write_run(run_tiny("fifo"), tmp_path, fmt="xlsx")


def test_parquet_jobs_table(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    write_run(run_tiny("fifo"), tmp_path, fmt="parquet")
    assert not (tmp_path / "jobs.csv").exists()
    table = pq.read_table(tmp_path / "jobs.parquet")
    assert table.column_names == [*JOB_COLUMNS, *RUN_COLUMNS]
    assert table.column("jct").to_pylist() == [100.0, 109.0, 148.0, 112.0]
    run = json.loads(table.schema.metadata[b"dlsched.run"])
    assert (run["policy"], run["seed"], run["version"]) == ("fifo", 0, "0.1.0")


def test_parquet_without_pyarrow_says_what_to_install(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # makes ``import pyarrow`` fail
    with pytest.raises(ParquetUnavailable, match=r"dlsched\[parquet\]"):
        write_run(run_tiny("fifo"), tmp_path / "out", fmt="parquet")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("seed", range(5))
def test_csv_writer_by_columns_writes_what_csv_writer_writes(tmp_path: Path, seed: int) -> None:
    """The column-wise writer (``_write_csv``) against the csv module row by row: the same
    bytes, quoting of commas, quotes and line breaks included."""
    import random

    from dlsched.report.output import _cell, _write_csv
    rng = random.Random(seed)
    texts = ["", "plain", "a,b", 'say "hi"', "two\nlines", "cr\r", " spaced "]
    # whole floats (written from ints), and whole but for one value the int cannot stand for
    odd = rng.choice([-0.0, 2.0**53, 0.5, float("inf")])
    rows = [(rng.choice(texts), rng.choice([None, rng.uniform(-1e6, 1e6)]),
             rng.choice([None, rng.randrange(-5, 10**6)]), rng.uniform(0, 1),
             rng.choice([True, False, None, "x,y", 3, 2.5]),
             float(rng.choice([0, 2**52, -(2**52), rng.randrange(-10**9, 10**9)])),
             odd if row == 25 else float(rng.randrange(-10, 10))) for row in range(50)]
    identity = {"policy": "fi,fo", "seed": 7, "version": ""}
    columns = ("t", "f", "i", "g", "mixed", "whole", "nearly")
    _write_csv(tmp_path / "new.csv", columns, rows, identity)
    with (tmp_path / "old.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow([*columns, *identity])
        tail = [_cell(v) for v in identity.values()]
        writer.writerows([*(_cell(v) for v in row), *tail] for row in rows)
    assert (tmp_path / "new.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
