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
