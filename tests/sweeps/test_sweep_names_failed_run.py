"""A run that fails names itself whichever way the sweep runs: in this process (``workers=1``,
the only way on one CPU) the error was the bare message, naming no run."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.sweeps.api import sweep
from dlsched.sweeps.execute import RunFailed

CLUSTER = """name: small
nodes:
  - {name: n0, gpu_type: T4, gpus: 4}
"""


@pytest.mark.parametrize("workers", [1, 2], ids=["this-process", "local-workers"])
def test_a_failed_run_is_named(tmp_path: Path, workers: int) -> None:
    small = tmp_path / "small.yaml"
    small.write_text(CLUSTER)
    with pytest.raises(RunFailed, match=r"^run trace=pollux-1, cluster=.*small.yaml, "
                                         r"policy=fifo, seed=0: .*the cluster has 4"):
        sweep(traces=["pollux-1"], clusters=[str(small)], policies=["fifo"], seeds=[0],
              options={"limit": 20}, workers=workers)
