"""Alibaba PAI 2020 task-table reader: rows by hand (with and without the job table beside
it, with and without a header), scope rules, malformed input."""

from __future__ import annotations

import pytest
from reader_checks import Writer, bad_third_line, expect_error

from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.pai import CPU_ONLY, NO_RUN_TIME, NOT_RUN

FMT = "alibaba-pai-2020"
HEADER = ("job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,"
          "gpu_type")
GOOD = "j1,tensorflow,1.0,Terminated,1000.0,1600.0,600.0,29.296875,50.0,MISC"
ROWS = [
    GOOD,
    "j2,worker,2.0,Terminated,1200.0,4800.0,800.0,60.0,200.0,V100",  # 2 x 2 whole GPUs
    "j2,ps,1.0,Terminated,1200.0,4800.0,1200.0,40.0,,",  # a parameter server: no GPU
    "j3,worker,4.0,Failed,1500.0,1700.0,400.0,20.0,100.0,T4",  # failed: it ran 200 s
    "j4,worker,1.0,Waiting,,,600.0,20.0,100.0,",  # never started
    "j5,worker,1.0,Running,2000.0,,600.0,20.0,100.0,P100",  # running when the trace ended
    "j6,worker,1.0,Terminated,2500.0,2500.0,600.0,20.0,100.0,P100",  # no run time
]


def test_rows_by_hand_without_the_job_table(write: Writer) -> None:
    path = write("pai_task_table.csv", "\n".join(ROWS) + "\n")  # no header, as downloaded
    assert detect_format(path) == FMT
    trace = read_trace(path)
    jobs = {j.job_id: j for j in trace.jobs}
    assert sorted(jobs) == ["j1/tensorflow", "j2/worker", "j3/worker"]
    one, two, failed = jobs["j1/tensorflow"], jobs["j2/worker"], jobs["j3/worker"]
    # rebased to the first launch (1,000 s); each arrives at its launch
    assert (one.submit_time, one.work, one.num_gpus, one.gpu_share) == (0.0, 600.0, 1, 0.5)
    assert one.cpus_per_gpu == 6.0 and one.memory_gb_per_gpu == pytest.approx(29.296875)
    assert (two.submit_time, two.work, two.num_gpus, two.gpu_share) == (200.0, 3600.0, 4, 1.0)
    assert two.cpus_per_gpu == 4.0 and two.memory_gb_per_gpu == 30.0  # per GPU of an instance
    assert (failed.num_gpus, failed.work) == (4, 200.0)
    assert one.gpu_types == () and one.queue == "default"
    notes = "\n".join(trace.warnings)
    assert f"dropped 1 row: {CPU_ONLY}" in notes and f"dropped 2 rows: {NOT_RUN}" in notes
    assert f"dropped 1 row: {NO_RUN_TIME}" in notes


def test_the_job_table_beside_it_gives_submissions_and_users(write: Writer) -> None:
    # j1 was submitted at 400 and waited 600 s; j2 at 1,100; j3 is not in the job table.
    write("pai_job_table.csv", "j1,i1,alice,Terminated,400.0,1600.0\n"
                               "j2,i2,bob,Terminated,1100.0,4800.0\n"
                               "j9,i9,carol,Failed,not-a-time,\n")
    path = write("pai_task_table.csv", f"{HEADER}\n" + "\n".join(ROWS[:4]) + "\n")
    trace = read_trace(path)
    jobs = {j.job_id: j for j in trace.jobs}
    # rebased to the first submission (400)
    assert (jobs["j1/tensorflow"].submit_time, jobs["j1/tensorflow"].queue) == (0.0, "alice")
    assert (jobs["j2/worker"].submit_time, jobs["j2/worker"].queue) == (700.0, "bob")
    assert (jobs["j3/worker"].submit_time, jobs["j3/worker"].queue) == (1100.0, "default")
    assert any("submission times and users from" in w for w in trace.warnings)


def test_a_task_launched_before_its_recorded_submission_arrives_at_its_launch(
        write: Writer) -> None:
    write("pai_job_table.csv", "j1,i1,alice,Terminated,1300.0,1600.0\n")
    trace = read_trace(write("pai_task_table.csv", GOOD + "\n" + ROWS[1] + "\n"))
    jobs = {j.job_id: j for j in trace.jobs}
    assert jobs["j1/tensorflow"].submit_time == 0.0  # its launch (1,000), the first
    assert jobs["j2/worker"].submit_time == 200.0


BAD_ROWS = [
    pytest.param(GOOD.replace(",1.0,Terminated", ",0,Terminated"), "inst_num", None,
                 id="no-instances"),
    pytest.param(GOOD.replace(",1.0,Terminated", ",1.5,Terminated"), "inst_num", None,
                 id="fractional-instances"),
    pytest.param(GOOD.replace(",50.0,", ",x,"), "plan_gpu", None, id="bad-number"),
    pytest.param(GOOD.replace(",1600.0,", ",900.0,"), "end_time", None,
                 id="ended-before-it-started"),
    pytest.param(GOOD.replace(",600.0,", ",-600.0,"), "plan_cpu", None, id="negative-cpu"),
    pytest.param(GOOD.replace(",Terminated,", ",,"), "status", None, id="no-status"),
    pytest.param(GOOD.replace("j1,tensorflow,1.0", "j1,tensorflow,8.0").replace(
        ",50.0,", ",100.0,"), "inst_num", ReaderOptions(max_gpus=4), id="too-many-gpus"),
    pytest.param(GOOD.replace(",600.0,", ",9600.0,"), "plan_cpu", ReaderOptions(max_cpus=64),
                 id="more-cpus-than-any-node"),
]


@pytest.mark.parametrize("row, field, options", BAD_ROWS)
def test_bad_row(write: Writer, row: str, field: str, options: ReaderOptions | None) -> None:
    path = write("tasks.csv", f"{HEADER}\n{GOOD.replace('j1,', 'j0,')}\n{row}\n")
    bad_third_line(path, FMT, field, options)


def test_a_row_of_another_width_is_an_error_on_its_line(write: Writer) -> None:
    path = write("tasks.csv", f"{GOOD}\nj2,worker,1.0,Terminated\n")
    expect_error(path, FMT, 2, None)


def test_a_repeated_task_is_an_error(write: Writer) -> None:
    path = write("tasks.csv", f"{HEADER}\n{GOOD}\n{GOOD}\n")
    with pytest.raises(Exception, match="used twice"):
        read_trace(path, FMT)
