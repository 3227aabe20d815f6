"""A sweep on a local 3-node Ray cluster (started here: ``ray_local``) gives the same results
table as a serial one (the suite's one Ray sweep test: ~10 s, mostly Ray's start-up)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

pytest.importorskip("ray")

import dlsched  # noqa: E402
from dlsched.runtime.executors.ray_local import local_ray_cluster  # noqa: E402

GRID = {"traces": ["synthetic:philly-sample"], "clusters": ["pollux-64"],
        "policies": ["fifo", "srtf"], "seeds": [0, 1],
        "options": {"synthetic_jobs": 20, "synthetic_rate": 600}, "plots": False}
COMPARED = ["policy", "seed", "key", "jobs_finished", "jct_mean", "makespan", "utilization"]


def test_a_ray_sweep_gives_the_serial_table(tmp_path: Path) -> None:
    serial = dlsched.sweep(**GRID, out=tmp_path / "serial", workers=1)
    with local_ray_cluster(("generic",) * 3, gpus_per_node=1, cpus_per_node=1) as nodes:
        on_ray = dlsched.sweep(**GRID, out=tmp_path / "ray", ray_address=nodes.address)
    assert on_ray.attrs["executed"] == 4
    pd.testing.assert_frame_equal(serial[COMPARED], on_ray[COMPARED])
    assert not (tmp_path / "ray" / "runs").exists()  # Ray tasks send back rows only
