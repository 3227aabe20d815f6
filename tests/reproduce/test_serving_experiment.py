"""The serving-azure reproduce experiment on tiny traces (the real ones live outside the repo)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.errors import ConfigError
from dlsched.reproduce.registry import ExperimentOptions, get_experiment


def _write(folder: Path, name: str, n: int) -> None:
    rows = [f"2023-11-16 18:00:{i * 0.5:09.6f},{300 + 50 * (i % 4)},{4 + i % 3}"
            for i in range(n)]
    (folder / f"AzureLLMInferenceTrace_{name}.csv").write_text(
        "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")


def test_light_load_meets_the_slo_and_disaggregation_is_measured(tmp_path: Path) -> None:
    _write(tmp_path, "conv", 20)
    _write(tmp_path, "code", 20)
    run = get_experiment("serving-azure").run
    rows = list(run(ExperimentOptions(("conv-2", "code-splitwise"), (),
                                      options={"traces": str(tmp_path)})))
    values = {(r.case, r.metric): r.value for r in rows}
    assert values[("conv-2", "slo_attainment")] == 1.0
    assert values[("code-splitwise", "throughput_ratio")] == pytest.approx(1.0)  # all served
    assert values[("code-splitwise", "cost_ratio")] == pytest.approx(2 / 8)


def test_missing_traces_name_the_file(tmp_path: Path) -> None:
    run = get_experiment("serving-azure").run
    with pytest.raises(ConfigError, match="AzureLLMInferenceTrace_conv.csv: no such file"):
        list(run(ExperimentOptions(("conv-4",), (), options={"traces": str(tmp_path)})))


def test_default_traces_come_from_the_data_directory(tmp_path: Path, monkeypatch) -> None:
    """Without ``traces`` the files are looked up in the data directory, wherever the run
    starts; not relative to the working directory."""
    folder = tmp_path / "data/traces/inference/azure-llm-2023"
    folder.mkdir(parents=True)
    _write(folder, "conv", 20)
    monkeypatch.setenv("DLSCHED_DATA", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)  # "../shared/data" from here is not the data directory
    run = get_experiment("serving-azure").run
    rows = list(run(ExperimentOptions(("conv-2",), ())))
    assert {r.metric for r in rows} == {"slo_attainment", "ttft_p99", "tpot_p99"}
    monkeypatch.delenv("DLSCHED_DATA")
    with pytest.raises(ConfigError, match=r"azure-llm-2023/AzureLLMInferenceTrace_conv.csv: "
                       r"found in neither .*DLSCHED_DATA is not set"):
        list(run(ExperimentOptions(("conv-2",), ())))
