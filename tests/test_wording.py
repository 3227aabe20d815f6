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
    (None, "n/a"), (0.0, "0.0 s"), (1.57, "1.6 s"), (59.94, "59.9 s"), (59.96, "1.0 min"),
    (150.0, "2.5 min"), (3599.0, "1.00 h"),
    (44640.0, "12.40 h"), (172_799.0, "2.00 d"), (2_754_311.0, "31.88 d"),
], ids=["none", "zero", "seconds", "just-under-a-minute", "rounds-up-to-a-minute",
        "minutes", "rounds-up-to-an-hour", "hours", "rounds-up-to-two-days", "days"])
def test_durations_read_in_the_unit_their_size_reads_best_in(seconds: float | None,
                                                            text: str) -> None:
    """One convention for every printed duration: a replay of a service's seconds-long jobs
    printed 'mean JCT 0.00 h', and a month of Philly 'makespan 765.09 h' beside 'mean total
    wait 0.0 s' (session 31)."""
    assert duration_text(seconds) == text
