"""Acme (Seren, Kalos; NSDI'24) job-trace reader: rows by hand, scope rules, bad input."""

from __future__ import annotations

import pytest
from reader_checks import Writer, bad_third_line, expect_error

from dlsched.workload.readers import ReaderOptions, detect_format, read_trace
from dlsched.workload.readers.acme import CPU_ONLY, NEVER_RAN

FMT = "acme"
SEREN = ("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,"
         "duration,queue,gpu_time")
GOOD = ("5778469,u5907,1,8,128,Other,COMPLETED,2023-03-01 00:23:58+08:00,"
        "2023-03-01 00:24:11+08:00,2023-03-01 01:09:04+08:00,2693,13,21544.0")
SEREN_ROWS = [
    ("5778432,u5907,1,8,128,Pretrain,FAILED,2023-03-01 00:18:22+08:00,"
     "2023-03-01 00:18:54+08:00,2023-03-01 00:20:51+08:00,117,32,936.0"),
    GOOD,
    ("5778470,u1,1,0,16,Other,COMPLETED,2023-03-01 00:30:00+08:00,"
     "2023-03-01 00:30:01+08:00,2023-03-01 00:31:00+08:00,59,1,0.0"),  # CPU only
    ("5778471,u1,1,4,16,Debug,CANCELLED,2023-03-01 00:40:00+08:00,,,0,0,0.0"),  # never ran
]
KALOS = ("job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,"
         "submit_time,start_time,end_time,fail_time,stop_time,duration,queue,gpu_time")
KALOS_ROW = ("dlctk696s0jbvitv,uf794,8,64,960,1000,100.0,SFT,FAILED,2023-05-17 11:00:58+00:00,"
             "2023-05-17 11:01:08+00:00,2023-05-17 11:01:16+00:00,2023-05-17 11:01:16+00:00,,"
             "18,10.0,1152.0")


def test_seren_rows_by_hand(write: Writer) -> None:
    path = write("trace_seren.csv", SEREN + "\n" + "\n".join(SEREN_ROWS) + "\n")
    assert detect_format(path) == FMT
    trace = read_trace(path)
    jobs = {j.job_id: j for j in trace.jobs}
    assert sorted(jobs) == ["5778432", "5778469"]
    first, second = jobs["5778432"], jobs["5778469"]
    assert (first.submit_time, first.work, first.num_gpus, first.queue) == (
        0.0, 117.0, 8, "Pretrain")
    assert (second.submit_time, second.work, second.queue) == (336.0, 2693.0, "Other")
    assert second.cpus_per_gpu == 16.0 and second.memory_gb_per_gpu == 0.0
    notes = "\n".join(trace.warnings)
    assert f"dropped 1 row: {CPU_ONLY}" in notes and f"dropped 1 row: {NEVER_RAN}" in notes


def test_kalos_memory_is_per_gpu_of_a_pod(write: Writer) -> None:
    trace = read_trace(write("trace_kalos.csv", f"{KALOS}\n{KALOS_ROW}\n"))
    job = trace.jobs[0]
    # 8 pods of 8 GPUs, 1,000 GB a pod: 125 GB per GPU; 960 CPUs over 64 GPUs: 15
    assert (job.num_gpus, job.work, job.queue) == (64, 18.0, "SFT")
    assert job.memory_gb_per_gpu == 125.0 and job.cpus_per_gpu == 15.0


BAD_ROWS = [
    pytest.param(GOOD.replace("COMPLETED", "DONE"), "state", None, id="unknown-state"),
    pytest.param(GOOD.replace(",1,8,128,", ",1,x,128,"), "gpu_num", None, id="bad-number"),
    pytest.param(GOOD.replace("2023-03-01 00:23:58+08:00", "yesterday"), "submit_time", None,
                 id="bad-time"),
    pytest.param(GOOD.replace("2023-03-01 00:24:11+08:00", "2023-03-01 00:20:00+08:00"),
                 "start_time", None, id="started-before-submitted"),
    pytest.param(GOOD.replace(",2693,", ",-5,"), "duration", None, id="negative-duration"),
    pytest.param(GOOD.replace(",1,8,128,", ",1,8,128,").replace(",8,128,", ",8,1280,"),
                 "cpu_num", ReaderOptions(max_cpus=128), id="more-cpus-than-any-node"),
    pytest.param(GOOD, "gpu_num", ReaderOptions(max_gpus=4), id="too-many-gpus"),
]


@pytest.mark.parametrize("row, field, options", BAD_ROWS)
def test_bad_row(write: Writer, row: str, field: str, options: ReaderOptions | None) -> None:
    small = SEREN_ROWS[0].replace(",1,8,128,", ",1,1,16,")
    path = write("trace.csv", f"{SEREN}\n{small}\n{row}\n")
    bad_third_line(path, FMT, field, options)


def test_an_unknown_column_is_named(write: Writer) -> None:
    path = write("trace.csv", f"{SEREN},gpu_kind\n{GOOD},A100\n")
    expect_error(path, FMT, 1, "gpu_kind")
