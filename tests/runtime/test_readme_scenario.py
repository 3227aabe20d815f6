"""The README scenario with the local executor and 4 fake GPUs (``scenario.py``): three example
jobs, among them a 2-worker data-parallel one that is preempted and resumes with a weight digest
identical to an uninterrupted run. The same scenario on Ray is in ``test_ray_executor.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from runtime_helpers import Live
from scenario import check, preempt_and_resume

pytest.importorskip("torch")


def test_readme_scenario_with_the_local_executor(live: Callable[..., Live], out: Path) -> None:
    handle = live(policy="srtf", grace=10.0)
    outcome = preempt_and_resume(handle, out)
    check(outcome)
    submitted = outcome.preempted["submitted_at"]
    print(f"local README scenario: A finished {outcome.preempted['finished_at'] - submitted:.1f}"
          " s after its submission")
