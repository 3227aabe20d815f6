"""MIG partition rules, placement choices and a drain, checked by hand (A100 40 GB: 7 compute
and 8 memory slices; 1g at 0-6, 2g at 0/2/4, 3g at 0/4 over 4 memory slices, 4g at 0, 7g at 0)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlsched.errors import InputError
from dlsched.mig.gpu import MigGpu
from dlsched.mig.placement import FirstFit, MigAware
from dlsched.mig.profiles import UnknownMigProfile, mig_profile, profiles_of
from dlsched.mig.run import MigJob, read_mig_jobs, run_mig

P = {p.size: p for p in profiles_of()}


def gpu_with(*placed: tuple[str, int]) -> MigGpu:
    gpu = MigGpu(0)
    for k, (size, start) in enumerate(placed):
        gpu.create(P[size], start, f"j{k}")
    return gpu


@pytest.mark.parametrize(("placed", "size", "start", "fits"), [
    pytest.param([("3g", 0)], "3g", 4, True, id="two-3g-halves"),
    pytest.param([("4g", 0)], "3g", 4, True, id="4g-plus-3g"),
    pytest.param([("3g", 4)], "4g", 0, True, id="3g-then-4g"),
    pytest.param([], "2g", 1, False, id="2g-only-at-even-starts"),
    pytest.param([("3g", 4)], "1g", 6, False, id="1g-inside-3g"),
    pytest.param([("1g", 0)], "4g", 0, False, id="1g-kills-4g"),
    pytest.param([("1g", s) for s in range(6)], "1g", 6, True, id="seventh-1g"),
    pytest.param([("3g", 0), ("2g", 4)], "2g", 6, False, id="no-2g-at-6"),
    pytest.param([("3g", 0), ("3g", 4)], "1g", 6, False, id="memory-full"),
    pytest.param([("4g", 0), ("2g", 4)], "2g", 6, False, id="no-start-6-for-2g"),
    pytest.param([("4g", 0), ("2g", 4)], "1g", 6, True, id="seven-compute"),
    pytest.param([("4g", 0), ("2g", 4), ("1g", 6)], "1g", 7, False, id="compute-full"),
])
def test_partition_rules(placed: list, size: str, start: int, fits: bool) -> None:
    assert gpu_with(*placed).fits(P[size], start) is fits


def test_profiles_by_name_and_unknown_ones() -> None:
    assert mig_profile("3g.20gb") == mig_profile("3G") == P["3g"]
    assert mig_profile("7g.80gb", "h100").memory_slices == 8
    with pytest.raises(UnknownMigProfile, match="'5g'.*known: 1g.5gb"):
        mig_profile("5g")


def test_mig_aware_keeps_the_large_profiles_placeable() -> None:
    # GPU 0 empty, GPU 1 holding a 3g at slice 4. First fit: GPU 0 slice 0, which kills the
    # only 7g placement left. MIG-aware (weights 1, 2, 4, 8, 16): on GPU 0 the best is slice
    # 6, losing 1g@6 + 3g@4 + 7g = 1 + 4 + 16 = 21; on GPU 1 any of slices 0-3 loses itself,
    # one 2g, the 3g at 0 and the 4g = 1 + 2 + 4 + 8 = 15: GPU 1, lowest start.
    gpus = [MigGpu(0), gpu_with(("3g", 4))]
    gpus[1].index = 1
    assert FirstFit().choose(gpus, P["1g"]) == (gpus[0], 0)
    gpu, start = MigAware(profiles_of()).choose(gpus, P["1g"])
    assert (gpu.index, start) == (1, 0)


def test_a_drain_lets_a_7g_in_before_new_small_jobs() -> None:
    # One GPU. a (1g, 0-100) runs; b (7g) arrives at 1 and fits nowhere; c (1g) at 2 and d
    # (1g, 10 s) at 50. First fit starts c and d beside a: b waits until c leaves at 102.
    # MIG-aware drains the GPU for b: c and d wait, b runs 100-110, then c and d start.
    jobs = [MigJob("a", 0, 100, P["1g"]), MigJob("b", 1, 10, P["7g"]),
            MigJob("c", 2, 100, P["1g"]), MigJob("d", 50, 10, P["1g"])]
    first = run_mig(jobs, 1, FirstFit())
    aware = run_mig(jobs, 1, MigAware(profiles_of()))
    assert first.mean_wait_by_profile["7g.40gb"] == pytest.approx(101.0)
    assert first.drains == 0 and first.end_time == pytest.approx(112.0)
    assert aware.mean_wait_by_profile["7g.40gb"] == pytest.approx(99.0)
    assert aware.drains == 1 and aware.end_time == pytest.approx(210.0)
    # every start creates an instance and every end destroys it: 4 jobs, 8 changes
    assert aware.reconfigurations == first.reconfigurations == 8


def test_arrival_only_jobs_never_drain_a_gpu() -> None:
    jobs = [MigJob("a", 0, math.inf, P["1g"]), MigJob("b", 1, math.inf, P["7g"]),
            MigJob("c", 2, math.inf, P["1g"])]
    report = run_mig(jobs, 1, MigAware(profiles_of()))
    assert report.drains == 0 and report.placed_by_profile == {"1g.5gb": 2}
    assert report.waiting_at_end == {"7g.40gb": 1}


@pytest.mark.parametrize(("row", "where"), [
    pytest.param("j1,0,10,5g", "jobs.csv:3:mig_profile", id="unknown-profile"),
    pytest.param("j1,x,10,1g", "jobs.csv:3:submit_time", id="bad-time"),
    pytest.param("j1,0,-1,1g", "jobs.csv:3:duration", id="negative-duration"),
    pytest.param("j0,0,10,1g", "jobs.csv:3:job_id: job id 'j0' is used twice: on line 2",
                 id="repeated-id"),
    pytest.param(",0,10,1g", "jobs.csv:3:job_id: missing value", id="missing-id"),
    # These three were read silently, or blamed on an unknown profile '':
    pytest.param("j1,0,10,3g,20gb", "jobs.csv:3:mig_profile: expected 4 fields, found 5",
                 id="values-after-the-last-column"),
    pytest.param("j1,0,10", "jobs.csv:3:mig_profile: missing: the row has 3 fields",
                 id="short-row"),
    pytest.param("j1,0,10,", "jobs.csv:3:mig_profile: missing value", id="empty-profile"),
])
def test_bad_rows_name_file_line_and_field(tmp_path, row: str, where: str) -> None:  # noqa: ANN001
    path = tmp_path / "jobs.csv"
    path.write_text(f"job_id,submit_time,duration,mig_profile\nj0,0,5,1g\n{row}\n")
    with pytest.raises(InputError, match=where.replace(".", r"\.")):
        read_mig_jobs(path)


def test_an_empty_file_says_so(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "jobs.csv"
    path.write_text("")
    with pytest.raises(InputError, match=r"jobs\.csv:1: empty file \(expected a header"):
        read_mig_jobs(path)


def test_reads_a_job_file(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_time,duration,mig_profile\nj0,0,inf,3g.20gb\n")
    assert read_mig_jobs(path) == [MigJob("j0", 0.0, math.inf, P["3g"])]


def test_mig_aware_scores_each_layout_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Idle GPUs share one layout, so 1,000 of them cost one scoring, not 1,000 (it was 6 s a
    choice on 10,000 GPUs); a GPU whose layout differs is scored on its own."""
    aware = MigAware(profiles_of())
    calls = []
    score = aware.placeability
    monkeypatch.setattr(aware, "placeability", lambda gpu: calls.append(gpu) or score(gpu))
    gpus = [MigGpu(i) for i in range(1000)]
    gpu, start = aware.choose(gpus, P["1g"])
    assert (gpu.index, start) == (0, 6)  # slice 6 loses least (test above)
    assert len(calls) == 1 + 7  # before, then after each of the 7 starts of a 1g
    gpus[500].create(P["3g"], 4, "j")
    gpu, start = aware.choose(gpus, P["1g"])
    assert (gpu.index, start) == (500, 0) and len(calls) == 8 + 1 + 4


@settings(max_examples=60, deadline=None)
@given(layouts=st.lists(st.lists(st.tuples(st.sampled_from(sorted(P)), st.integers(0, 7)),
                                 max_size=4), min_size=1, max_size=6),
       size=st.sampled_from(sorted(P)))
def test_mig_aware_choice_is_the_same_from_its_layout_memory(layouts: list, size: str) -> None:
    """One placer used again and again (as a run uses it) chooses as a fresh one would."""
    gpus = []
    for index, wanted in enumerate(layouts):
        gpu = MigGpu(index)
        for k, (name, start) in enumerate(wanted):
            if gpu.fits(P[name], start):
                gpu.create(P[name], start, f"j{k}")
        gpus.append(gpu)
    used = MigAware(profiles_of())
    for name in sorted(P):  # fill its memory with other choices first
        used.choose(gpus, P[name])
    assert used.choose(gpus, P[size]) == MigAware(profiles_of()).choose(gpus, P[size])
