"""Alibaba PAI 2020 task-table reader: rows by hand (with and without the job table beside
it, with and without a header), scope rules, malformed input."""

from __future__ import annotations

import pytest
from reader_checks import Writer, bad_third_line, expect_error

from dlsched.errors import InputError
from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.pai import CPU_ONLY, MIXED, NO_RUN_TIME, NOT_RUN

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
    assert sorted(jobs) == ["j1", "j2", "j3"]  # one job per PAI job
    one, two, failed = jobs["j1"], jobs["j2"], jobs["j3"]
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
    assert (jobs["j1"].submit_time, jobs["j1"].queue) == (0.0, "alice")
    assert (jobs["j2"].submit_time, jobs["j2"].queue) == (700.0, "bob")
    assert (jobs["j3"].submit_time, jobs["j3"].queue) == (1100.0, "default")
    assert any("submission times and users from" in w for w in trace.warnings)


def test_a_task_launched_before_its_recorded_submission_arrives_at_its_launch(
        write: Writer) -> None:
    write("pai_job_table.csv", "j1,i1,alice,Terminated,1300.0,1600.0\n")
    trace = read_trace(write("pai_task_table.csv", GOOD + "\n" + ROWS[1] + "\n"))
    jobs = {j.job_id: j for j in trace.jobs}
    assert jobs["j1"].submit_time == 0.0  # its launch (1,000), the first
    assert jobs["j2"].submit_time == 200.0


# A TensorFlow job with a CPU-only PS, 2 workers and 1 evaluator (all whole GPUs), launched
# together; a PyTorch job of a 1-GPU chief and 3 workers; a job of 50% and 100% instances.
GANGS = [
    "g1,ps,1.0,Terminated,1000.0,5000.0,1200.0,40.0,,",
    "g1,worker,2.0,Terminated,1000.0,5000.0,800.0,30.0,100.0,V100",
    "g1,evaluator,1.0,Terminated,1010.0,5020.0,400.0,20.0,100.0,V100",
    "g2,chief,1.0,Terminated,2000.0,2600.0,600.0,30.0,100.0,T4",
    "g2,worker,3.0,Terminated,2000.0,2600.0,600.0,30.0,100.0,T4",
    "g3,worker,2.0,Terminated,3000.0,3600.0,600.0,30.0,100.0,T4",
    "g3,evaluator,1.0,Terminated,3000.0,3600.0,300.0,20.0,50.0,T4",
]


def test_a_jobs_gpu_tasks_are_one_gang_job(write: Writer) -> None:
    trace = read_trace(write("pai_task_table.csv", "\n".join(GANGS) + "\n"))
    jobs = {j.job_id: j for j in trace.jobs}
    assert sorted(jobs) == ["g1", "g2", "g3"]
    tf, torch, mixed = jobs["g1"], jobs["g2"], jobs["g3"]
    # 2 workers + 1 evaluator; from the first launch (1,000) to the last end (5,020)
    assert (tf.submit_time, tf.num_gpus, tf.gpu_share, tf.work) == (0.0, 3, 1.0, 4020.0)
    assert tf.cpus_per_gpu == pytest.approx((2 * 8 + 4) / 3)  # the PS's CPUs are not here
    assert tf.memory_gb_per_gpu == pytest.approx((2 * 30 + 20) / 3)
    assert (torch.num_gpus, torch.work, torch.cpus_per_gpu) == (4, 600.0, 6.0)
    assert (mixed.num_gpus, mixed.gpu_share) == (3, 1.0)  # the 50% evaluator gets a whole GPU
    notes = "\n".join(trace.warnings)
    assert f"1 job {MIXED}" in notes and f"dropped 1 row: {CPU_ONLY}" in notes


def test_a_job_with_the_job_table_arrives_at_its_submission(write: Writer) -> None:
    write("pai_job_table.csv", "g1,i1,alice,Terminated,900.0,5020.0\n")
    trace = read_trace(write("pai_task_table.csv", "\n".join(GANGS[:3]) + "\n"))
    (job,) = trace.jobs
    assert (job.job_id, job.queue, job.num_gpus, job.work) == ("g1", "alice", 3, 4020.0)


def test_the_limit_counts_jobs_not_tasks(write: Writer) -> None:
    path = write("pai_task_table.csv", "\n".join(GANGS) + "\n")
    trace = read_trace(path, FMT, ReaderOptions(limit=2))
    assert [(j.job_id, j.num_gpus) for j in trace.jobs] == [("g1", 3), ("g2", 4)]


def test_a_gang_larger_than_the_cluster_is_told_on_its_first_task(write: Writer) -> None:
    path = write("tasks.csv", "\n".join(GANGS[3:5]) + "\n")  # 4 GPUs in all, 1 + 3
    told = r"tasks.csv:1:inst_num: job g2: its 2 GPU tasks \(chief, worker\) ask for 4 GPUs"
    with pytest.raises(InputError, match=told):
        read_trace(path, FMT, ReaderOptions(max_gpus=3))


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
