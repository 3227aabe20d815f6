"""The Pollux artifact's job work (progress target with statistical efficiency)."""

from __future__ import annotations

import pytest

from dlsched.cluster.builtin import resolve_cluster
from dlsched.errors import ConfigError
from dlsched.experiment import load_trace
from dlsched.run_config import RunConfig
from dlsched.workload.readers.pollux_work import epoch_ends, progress_seconds, remaining_steps


# The artifact's own Job (simulator.py) run alone on its packed placement from t=0, stepped
# every 60 s, minus its 30 s start: the seconds to completion (petuum/adaptdl osdi21-artifact).
@pytest.mark.parametrize(("app", "replicas", "batch", "artifact"), [
    pytest.param("bert", 6, 384, 3092, id="bert-6"),
    pytest.param("cifar10", 12, 4096, 624, id="cifar10-12"),
    pytest.param("deepspeech2", 12, 640, 2477, id="deepspeech2-12"),
    pytest.param("ncf", 1, 32768, 47, id="ncf-1-accumulates"),
    pytest.param("yolov3", 4, 64, 14102, id="yolov3-4"),
    pytest.param("imagenet", 32, 6400, 27431, id="imagenet-32"),
])
def test_matches_the_artifacts_job(app: str, replicas: int, batch: int, artifact: int) -> None:
    assert progress_seconds(app, batch, replicas) == pytest.approx(artifact, abs=1)


def test_run_config_switches_the_work_definition() -> None:
    cluster = resolve_cluster("pollux-64")
    steps = load_trace(RunConfig(trace="pollux-6", limit=20), cluster)
    progress = load_trace(RunConfig(trace="pollux-6", limit=20, work_definition="progress"),
                          cluster)
    ncf = [(a.work, b.work) for a, b in zip(steps.jobs, progress.jobs, strict=True)
           if a.model == "ncf"]
    assert ncf and all(b == 47 and a < 40 for a, b in ncf)


def test_progress_work_needs_a_pollux_trace() -> None:
    with pytest.raises(ConfigError, match="pollux-format"):
        load_trace(RunConfig(trace="philly-sample", limit=5, work_definition="progress"),
                   resolve_cluster("philly"))


def test_single_queue_drops_vc_queues_and_pins() -> None:
    trace = load_trace(RunConfig(trace="philly-sample", limit=50, single_queue=True),
                       resolve_cluster("philly"))
    assert {(s.queue, s.pool) for s in trace.jobs} == {("default", None)}


def test_keep_trace_clock_keeps_the_files_submit_times() -> None:
    cluster = resolve_cluster("pollux-64")
    rebased = load_trace(RunConfig(trace="pollux-6", limit=3), cluster)
    kept = load_trace(RunConfig(trace="pollux-6", limit=3, keep_trace_clock=True), cluster)
    # workload-6.csv: cifar10-0 at 53 s, cifar10-1 at 154 s
    assert [s.submit_time for s in rebased.jobs][:2] == [0, 101]
    assert [s.submit_time for s in kept.jobs][:2] == [53, 154]


# The artifact's Optimus (simulator/optimus.py): job.remaining = get_iteration(bsz, C) -
# get_iteration(bsz, epoch), C the completion epoch (max_epochs - 1); 1 in the last epoch.
# Values printed by the artifact's own Application objects.
@pytest.mark.parametrize(("app", "batch", "replicas", "epoch", "artifact"), [
    ("cifar10", 2048, 6, 0, 3066), ("cifar10", 2048, 6, 49, 1264), ("cifar10", 2048, 6, 98, 25),
    ("cifar10", 2048, 6, 99, 1), ("bert", 384, 6, 0, 236), ("ncf", 32768, 1, 4, 760),
    ("deepspeech2", 640, 12, 39, 469), ("imagenet", 3200, 24, 44, 18816),
])
def test_remaining_steps_match_the_artifacts_optimus(app: str, batch: int, replicas: int,
                                                     epoch: int, artifact: int) -> None:
    ends = epoch_ends(app, batch, replicas)
    done = 0.0 if epoch == 0 else ends[epoch - 1] + 0.5
    assert remaining_steps(app, batch, replicas, done) == pytest.approx(artifact)
