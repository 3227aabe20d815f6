"""The ``llm-jobs`` format: LLM jobs that declare a model and tokens, the input of ``llm-size``
from ``dlsched simulate`` (it had no trace format: only ``model_job`` in Python)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from dlsched.cli import app
from dlsched.errors import InputError
from dlsched.perf.llm.sizes import model_job
from dlsched.workload.readers import ReaderOptions, detect_format, read_trace

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "llm" / "llm-jobs.csv"
HEADER = "job_id,submit_time,model,tokens,gpu_type,max_gpus,queue\n"


def test_a_row_is_the_job_model_job_makes(write: Callable[[str, str], Path]) -> None:
    path = write("jobs.csv", HEADER + "a,100,llama2-70b,4e9,A100-80G,64,prod\n"
                                      "b,160,megatron-1.7b,1e9,A100,,\n")
    assert detect_format(path) == "llm-jobs"
    trace = read_trace(path, options=ReaderOptions(max_gpus=128))
    assert trace.throughput == "llm"
    a, b = trace.jobs
    assert a == model_job("a", "llama2-70b", 4e9, 0.0, "A100-80G", 64, "prod")  # rebased
    assert (a.work, a.min_gpus, a.max_gpus) == (954, 16, 64)
    assert b == model_job("b", "megatron-1.7b", 1e9, 60.0, "A100", 128)  # the cluster's 128


@pytest.mark.parametrize("row, where", [
    ("a,0,gpt-9,1e9,A100,,", r"jobs\.csv:2:model: unknown model 'gpt-9' \(known: gpt3-175b"),
    ("a,0,llama2-70b,0,A100,,", r"jobs\.csv:2:tokens: must be > 0"),
    ("a,0,llama2-70b,1e9,V100,,", r"jobs\.csv:2:gpu_type: the llm throughput model knows no "
                                  r"V100 nodes"),
    ("a,0,llama2-70b,1e9,A100,16,", r"jobs\.csv:2:max_gpus: llama2-70b fits on no size up to "
                                    r"16 A100"),
], ids=["model", "tokens", "gpu-type", "max-gpus"])
def test_a_bad_row_names_its_field(write: Callable[[str, str], Path], row: str,
                                   where: str) -> None:
    with pytest.raises(InputError, match=where):
        read_trace(write("jobs.csv", HEADER + row + "\n"))


def test_the_example_runs_under_llm_size(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["simulate", "--trace", str(EXAMPLE), "--cluster",
                                      "elasticflow-128", "--policy", "llm-size", "--out",
                                      str(out)])
    assert result.exit_code == 0, result.output
    assert "llm-size: 4/4 finished" in result.output
    rows = (out / "jobs.csv").read_text().splitlines()[1:]
    assert [r.split(",")[0] for r in rows] == ["small-a", "llama-a", "small-b", "llama-b"]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_jobs_table_gives_the_size_each_job_ran_at_and_its_range(tmp_path: Path,
                                                                 fmt: str) -> None:
    """An ``llm-jobs`` job asks for no size: ``num_gpus`` is the smallest the planner fits
    (small-a: 1 GPU), while it ran on 64 (its GPU-seconds over its run time). Was: nothing in
    jobs.csv said so. Now runs with elastic jobs add ``min_gpus,max_gpus,last_gpus`` after the
    existing columns (none renamed)."""
    import csv

    from typer.testing import CliRunner

    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    out = tmp_path / "run"
    result = CliRunner().invoke(app, ["simulate", "--trace", str(EXAMPLE), "--cluster",
                                      "elasticflow-128", "--policy", "llm-size", "--out",
                                      str(out), "--jobs-format", fmt])
    assert result.exit_code == 0, result.output
    if fmt == "csv":
        with (out / "jobs.csv").open() as handle:
            rows = list(csv.DictReader(handle))
    else:
        import pyarrow.parquet as pq

        rows = pq.read_table(out / "jobs.parquet").to_pylist()
    names = list(rows[0])
    assert names[names.index("deadline") + 1:names.index("policy")] == [
        "min_gpus", "max_gpus", "last_gpus"]
    sizes = {r["job_id"]: (r["num_gpus"], r["min_gpus"], r["max_gpus"], r["last_gpus"])
             for r in rows}
    expected = {"small-a": (1, 1, 64, 64), "llama-a": (40, 40, 128, 64),
                "small-b": (1, 1, 32, 32), "llama-b": (40, 40, 96, 64)}
    if fmt == "csv":
        expected = {k: tuple(map(str, v)) for k, v in expected.items()}
    assert sizes == expected
