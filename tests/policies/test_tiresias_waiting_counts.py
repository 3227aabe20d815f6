"""Tiresias' counts of waiting jobs per queue (``_waiting_in``) are the counts of the queues
each waiting job is filed under (``_waiting_queue``) at every cycle: so "a job waits above the
last queue" is told as all filed jobs less those of the last queue, without a slice
(``_demotions_matter_waiting``, asked every cycle: issue 14)."""

from __future__ import annotations

from collections import Counter

import pytest
from builders import make_cluster, random_preemptive_jobs, simulator

from dlsched.policies.tiresias import DiscretizedLas


@pytest.mark.parametrize("options", [
    {"thresholds": (600.0,)}, {"thresholds": (600.0,), "promote_knob": 2.0},
    {"thresholds": (300.0, 1200.0), "promote_knob": 1.0}],
    ids=["two-queues", "promotion", "three-queues-promotion"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_waiting_counts_follow_the_filed_queues(options: dict, seed: int,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    asked = []
    told = DiscretizedLas._demotions_matter_waiting

    def checked(self: DiscretizedLas) -> bool:
        filed = Counter(self._waiting_queue.values())
        assert self._waiting_in == [filed[q] for q in range(len(self.thresholds) + 1)]
        answer = told(self)
        assert answer == any(self._waiting_in[:len(self.thresholds)])
        asked.append(answer)
        return answer

    monkeypatch.setattr(DiscretizedLas, "_demotions_matter_waiting", checked)
    sim = simulator("tiresias", make_cluster(nodes=2, gpus=4), random_preemptive_jobs(seed),
                    options=options)
    sim.run()
    assert True in asked and False in asked  # both answers were met and checked
