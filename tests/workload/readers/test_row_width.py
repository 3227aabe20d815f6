"""A row with fewer fields than its file's columns: the message counts them against the header
when the file has one, against the format when it has none (a Gavel trace, PAI's task table as
downloaded). 'the row has 7 fields, the header 10' sent a user looking for a header line that a
Gavel trace never has."""

from __future__ import annotations

import pytest
from reader_checks import Writer, expect_error

T = "\t"
GAVEL = T.join(["ResNet-18 (batch size 128)", "python3 main.py", "cifar10", "--num_steps", "1",
                "1000", "2", "1", "-1.000000", "0"])
PAI_HEADER = ("job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,"
              "gpu_type")
PAI = "j1,tensorflow,1.0,Terminated,1000.0,1600.0,600.0,29.296875,50.0,MISC"
ITP_HEADER = "job_id,submission_time,duration,num_gpu"


@pytest.mark.parametrize(("name", "fmt", "text", "line", "field", "told"), [
    ("g.trace", "gavel", f"{GAVEL}\n{T.join(GAVEL.split(T)[:7])}\n", 2, "priority_weight",
     "the row has 7 fields, the format 10"),
    ("pai_task_table.csv", "alibaba-pai-2020", f"{PAI}\nj2,worker,1.0,Terminated\n", 2,
     "start_time", "the row has 4 fields, the format 10"),
    ("pai_task_table.csv", "alibaba-pai-2020", f"{PAI_HEADER}\n{PAI}\nj2,worker,1.0\n", 3,
     "status", "the row has 3 fields, the header 10"),
    ("itp.csv", None, f"{ITP_HEADER}\na1,0,100,1\na2,10,100\n", 3, "num_gpu",
     "the row has 3 fields, the header 4"),
], ids=["gavel-headerless", "pai-headerless", "pai-with-header", "itp-header"])
def test_a_short_row_is_counted_against_what_names_the_columns(
        write: Writer, name: str, fmt: str | None, text: str, line: int, field: str,
        told: str) -> None:
    error = expect_error(write(name, text), fmt, line, field)
    assert told in str(error)
