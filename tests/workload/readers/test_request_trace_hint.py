"""A request trace given as a job trace says what it is and where it goes, not "unknown trace
format" (or, for Mooncake's JSON lines, the Kubernetes reader's "expected a Kubernetes List")."""

from __future__ import annotations

import json

import pytest
from reader_checks import Writer

from dlsched.errors import InputError
from dlsched.workload.readers import read_trace
from dlsched.workload.readers.base import REQUEST_TRACE


@pytest.mark.parametrize("name, text", [
    pytest.param("azure.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                              "2023-11-16 18:15:46.6805900,374,44\n", id="azure"),
    pytest.param("mooncake.jsonl", json.dumps({"timestamp": 0, "input_length": 6955,
                                               "output_length": 52, "hash_ids": [0, 1]}) + "\n",
                 id="mooncake"),
])
def test_a_request_trace_is_named_as_one(write: Writer, name: str, text: str) -> None:
    path = write(name, text)
    with pytest.raises(InputError) as caught:
        read_trace(path)
    assert str(caught.value) == f"{path}:1: {REQUEST_TRACE}"
