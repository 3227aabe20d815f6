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
def test_a_failed_run_is_named(workers: int) -> None:
    # Gavel's jobs are rated by its table, which has no T4: found at the run, not before
    with pytest.raises(RunFailed, match=r"^run trace=gavel-continuous-1000, cluster=pollux-64, "
                                         r"policy=fifo, seed=0: .*gavel table has no GPU type"):
        sweep(traces=["gavel-continuous-1000"], clusters=["pollux-64"], policies=["fifo"],
              seeds=[0], options={"limit": 20}, workers=workers)


def test_a_trace_too_large_for_a_cluster_fails_before_the_first_run(tmp_path: Path) -> None:
    """The grid's runs on pollux-64 ran, then the sweep stopped at the small cluster's first
    run; the inputs are checked before any run."""
    from dlsched.errors import ConfigError

    small = tmp_path / "small.yaml"
    small.write_text(CLUSTER)
    started: list[int] = []
    with pytest.raises(ConfigError, match=r"^trace pollux-1 on cluster .*small.yaml: .*"
                                          r"num_replicas: asks for 6 GPUs; the cluster has 4"):
        sweep(traces=["pollux-1"], clusters=["pollux-64", str(small)], policies=["fifo"],
              seeds=[0], options={"limit": 20}, workers=1, out=tmp_path / "out",
              on_start=started.append)
    assert started == [] and not (tmp_path / "out").exists()
