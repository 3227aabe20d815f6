"""The examples under preemption, run as the service runs them (one process group per worker,
the contract's environment, SIGTERM to preempt):

- SIGTERM at about step 15, then a restart, gives bit-identical final weights to an
  uninterrupted run (CNN with 1 worker, transformer with 2 data-parallel workers, where only
  rank 1 gets the signal and both ranks stop at the same step);
- a 2-worker checkpoint resumes with 1 worker, and a 1-worker one with 2, from the saved step
  (elastic restarts: same model, the global batch split over the new world size);
- rank 0 reports progress to the service, the last step included.

A worker spends ~3.5 s of CPU starting torch, so every run is started in two concurrent waves
(first attempts, then restarts) by one module fixture; the tests read its results.
"""

from __future__ import annotations

import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from job_helpers import ProgressServer, Workers, run_to_end

pytest.importorskip("torch")

STEPS = 40
PREEMPT_AT = 15
SCENARIOS = {"cnn-1-worker": ("train_cnn.py", 1),
             "transformer-2-workers": ("train_transformer.py", 2)}
BOTH = pytest.mark.parametrize("name", list(SCENARIOS))


@dataclass(frozen=True)
class Preempted:
    """An uninterrupted run and a run stopped by SIGTERM, done side by side."""

    example: str
    workers: int
    checkpoints: Path  # of the stopped run
    stopped_at: int
    uninterrupted_digest: str
    reports: list[dict[str, object]]
    report_paths: list[str]


@dataclass(frozen=True)
class Resumed:
    """Attempt 2 of a stopped run, on a copy of its checkpoints, at some world size."""

    digest: str
    output: str


@dataclass(frozen=True)
class Runs:
    preempted: dict[str, Preempted]  # by scenario
    resumed: dict[tuple[str, int], Resumed]  # by (scenario, world size of attempt 2)


def args_for(digest: Path, delay: float = 0.0) -> list[str]:
    return ["--steps", str(STEPS), "--batch-size", "16", "--seed", "3",
            "--checkpoint-every", "10", "--digest-out", str(digest), "--step-delay", str(delay)]


def saved_steps(directory: Path) -> list[int]:
    return sorted(int(re.findall(r"\d+", path.name)[0]) for path in directory.glob("ckpt-*.pt"))


def preempt_side_by_side(example: str, workers: int, root: Path) -> Preempted:
    """Run uninterrupted and, at the same time, a run that gets SIGTERM at about step 15."""
    service = ProgressServer()
    try:
        with Workers(example, root / "ckpt-a", args_for(root / "a"), workers,
                     service_url=service.url) as uninterrupted, \
             Workers(example, root / "ckpt-b", args_for(root / "b", delay=0.05),
                     workers) as stopped:
            stopped.wait_for_step(PREEMPT_AT, timeout=60.0)
            # 2 workers: only the last rank is signalled; all must stop at the same step.
            stopped.terminate(ranks=[workers - 1])
            assert stopped.wait() == [0] * workers, stopped.output()
            assert uninterrupted.wait() == [0] * workers, uninterrupted.output()
    finally:
        service.close()
    match = re.search(r"stopped at step (\d+): checkpoint saved", stopped.output())
    assert match, stopped.output()
    assert not (root / "b").exists()  # a stopped run writes no final digest
    return Preempted(example, workers, root / "ckpt-b", int(match.group(1)),
                     (root / "a").read_text(), service.bodies(),
                     [path for path, _, _ in service.requests])


def resume(run: Preempted, root: Path, workers: int) -> Resumed:
    checkpoints = root / "ckpt"
    shutil.copytree(run.checkpoints, checkpoints)
    codes, output = run_to_end(run.example, checkpoints, args_for(root / "digest"), workers,
                               attempt=2)
    assert codes == [0] * workers, output
    return Resumed((root / "digest").read_text(), output)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    """Wave 1: both scenarios' first attempts. Wave 2: each restarted at its own size, the
    2-worker one also at 1 worker and the 1-worker one at 2."""
    with ThreadPoolExecutor() as pool:
        first = {name: pool.submit(preempt_side_by_side, example, workers,
                                   tmp_path_factory.mktemp(name))
                 for name, (example, workers) in SCENARIOS.items()}
        preempted = {name: future.result() for name, future in first.items()}
        restarts = [(name, run.workers) for name, run in preempted.items()]
        restarts += [("transformer-2-workers", 1), ("cnn-1-worker", 2)]
        second = {(name, size): pool.submit(resume, preempted[name],
                                            tmp_path_factory.mktemp(f"{name}-at-{size}"), size)
                  for name, size in restarts}
        return Runs(preempted, {key: future.result() for key, future in second.items()})


@BOTH
def test_sigterm_saves_the_current_step_and_exits_0(runs: Runs, name: str) -> None:
    preempted = runs.preempted[name]
    assert PREEMPT_AT <= preempted.stopped_at < STEPS
    assert preempted.stopped_at == saved_steps(preempted.checkpoints)[-1]


@BOTH
def test_resumed_run_gives_identical_weights(runs: Runs, name: str) -> None:
    preempted = runs.preempted[name]
    resumed = runs.resumed[(name, preempted.workers)]
    assert f"resumed from step {preempted.stopped_at} " in resumed.output
    assert resumed.digest == preempted.uninterrupted_digest


@pytest.mark.parametrize(("name", "size"), [("transformer-2-workers", 1), ("cnn-1-worker", 2)],
                         ids=["shrink-2-to-1", "grow-1-to-2"])
def test_elastic_restart_at_a_new_size(runs: Runs, name: str, size: int) -> None:
    preempted = runs.preempted[name]
    resumed = runs.resumed[(name, size)]
    assert (f"resumed from step {preempted.stopped_at} (saved at world size "
            f"{preempted.workers})" in resumed.output)
    assert f"rank 0/{size}," in resumed.output
    assert f"done: {STEPS} steps" in resumed.output
    first_step = re.search(r"^step (\d+) ", resumed.output, re.MULTILINE)
    assert first_step and int(first_step.group(1)) == preempted.stopped_at + 1
    assert re.fullmatch(r"[0-9a-f]{64}\n", resumed.digest)


@BOTH
def test_rank_0_reports_progress(runs: Runs, name: str) -> None:
    preempted = runs.preempted[name]
    assert preempted.reports, "no progress report arrived"
    assert set(preempted.report_paths) == {"/v1/jobs/job-test/progress"}
    last = preempted.reports[-1]
    assert last["step"] == STEPS  # the final report is flushed before exit
    assert isinstance(last["samples_per_second"], float) and last["samples_per_second"] > 0
    assert set(last["metrics"]) == {"loss"}  # type: ignore[arg-type]
