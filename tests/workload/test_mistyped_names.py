"""A mistyped bundled trace or built-in cluster names the one meant."""

from __future__ import annotations

import pytest

from dlsched.cluster.builtin import resolve_cluster
from dlsched.errors import DlschedError
from dlsched.perf.llm.models import resolve_model
from dlsched.workload.bundled import check_trace_names


@pytest.mark.parametrize(("call", "said"), [
    (lambda: check_trace_names("polux-1"), "; did you mean 'pollux-1'?"),
    (lambda: resolve_cluster("pollux-6"), "; did you mean 'pollux-64'?"),
    (lambda: check_trace_names("/no/such/dir/jobs.csv"), "(bundled: "),
    (lambda: resolve_model("llama2-70"), "; did you mean 'llama2-70b'?"),
], ids=["trace", "cluster", "a-path-is-not-guessed", "llm-model"])
def test_a_mistyped_name_names_the_one_meant(call, said: str) -> None:  # noqa: ANN001
    """'--trace polux-1' and '--cluster pollux-6' listed 38 traces or 13 clusters and left the
    reader to find the one meant."""
    with pytest.raises(DlschedError) as err:
        call()
    text = str(err.value)
    assert said in text and (said.startswith(";") or "did you mean" not in text), text


@pytest.mark.parametrize("args", [
    ["--trace", "synthetic,pollux-1"],
    ["--trace", "synthetic", "--synthetic-from", "synthetic", "--synthetic-jobs", "3"],
], ids=["in-a-list", "as-its-own-source"])
def test_synthetic_where_only_a_file_or_bundled_name_goes(tmp_path, args) -> None:  # noqa: ANN001
    """'synthetic' beside other traces (or as --synthetic-from) said 'no such file, and not a
    bundled trace (bundled: ...38 names)', as if --trace synthetic did not exist."""
    from typer.testing import CliRunner

    from dlsched.cli import app

    result = CliRunner().invoke(app, ["simulate", *args, "--cluster", "pollux-64", "--policy",
                                      "fifo", "--out", str(tmp_path / "out")])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, text
    assert "synthetic: made only by --trace synthetic alone" in text
    assert "bundled:" not in text


def test_a_mistyped_format_names_the_one_meant(tmp_path) -> None:  # noqa: ANN001
    """'--format helio' listed the 17 formats and left the reader to find 'helios'."""
    from dlsched.workload.readers import read_trace

    path = tmp_path / "cluster_log.csv"
    path.write_text("job_id\n1\n")
    with pytest.raises(DlschedError, match="unknown format 'helio' .*; did you mean 'helios'\\?"):
        read_trace(path, "helio")
