"""Counts in messages read as English."""

from __future__ import annotations

import pytest

from dlsched.cluster.cluster import Cluster, Node
from dlsched.wording import CountTexts, count_of, duration_text


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert [count_of(n, "node") for n in (0, 1, 2)] == ["0 nodes", "1 node", "2 nodes"]
    assert count_of(1.0, "GPU") == "1 GPU" and count_of(0.5, "GPU") == "0.5 GPUs"
    assert count_of(3, "query", "queries") == "3 queries"


def test_count_texts_are_made_once_per_count() -> None:
    needs = CountTexts("needs {}", "GPU")
    assert [needs[n] for n in (1, 4, 1)] == ["needs 1 GPU", "needs 4 GPUs", "needs 1 GPU"]
    assert sorted(needs) == [1, 4] and needs[4] is needs[4]


def test_a_one_node_cluster_is_described_in_the_singular() -> None:
    assert Cluster("solo", (Node("n0", "V100", 1),)).describe() == "solo: 1 node, 1 GPU (1 V100)"


@pytest.mark.parametrize(("seconds", "text"), [
    (None, "n/a"), (1.57, "1.6 s"), (359.9, "359.9 s"), (360.0, "0.10 h"), (44640.0, "12.40 h"),
], ids=["none", "seconds", "just-under", "a-tenth-hour", "hours"])
def test_durations_read_in_a_unit_that_shows_them(seconds: float | None, text: str) -> None:
    """A replay of a service's seconds-long jobs printed 'mean JCT 0.00 h'."""
    assert duration_text(seconds) == text
