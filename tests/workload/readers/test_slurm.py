"""Slurm accounting (``sacct --parsable2``): GPUs from AllocTRES, drops counted, errors located."""

from __future__ import annotations

import pytest
from reader_checks import Writer, expect_error

from dlsched.errors import InputError
from dlsched.workload.readers import ReaderOptions, read_trace

HEADER = "JobID|JobName|User|Partition|Submit|Start|End|State|AllocTRES\n"
ROWS = (
    "100|train|ana|gpu|2026-11-02T10:00:00|2026-11-02T10:00:05|2026-11-02T11:00:05|COMPLETED|"
    "billing=8,cpu=8,gres/gpu:a100=4,gres/gpu=4,mem=64G,node=1\n"
    "100.batch|batch||gpu|2026-11-02T10:00:05|2026-11-02T10:00:05|2026-11-02T11:00:05|"
    "COMPLETED|cpu=8,gres/gpu=4,mem=64G,node=1\n"
    "101|prep|bo|cpu|2026-11-02T10:01:00|2026-11-02T10:01:00|2026-11-02T10:02:00|COMPLETED|"
    "cpu=2,mem=4G,node=1\n"
    "102|eval|bo|gpu|2026-11-02T10:02:00|Unknown|Unknown|CANCELLED by 0|billing=1\n"
    "103|big|cy|gpu|2026-11-02T10:03:00|2026-11-02T10:30:00|2026-11-02T12:00:00|TIMEOUT|"
    "cpu=16,gres/gpu=8,node=2\n"
    "104|run|cy|gpu|2026-11-02T10:04:00|2026-11-02T10:30:00|Unknown|RUNNING|gres/gpu=1\n")


def test_allocations_become_jobs_and_the_rest_is_counted(write: Writer) -> None:
    trace = read_trace(write("week.sacct", HEADER + ROWS))
    assert trace.format == "slurm-sacct"
    assert [(j.job_id, j.submit_time, j.num_gpus, j.work, j.queue, j.gpu_types)
            for j in trace.jobs] == [("100", 0.0, 4, 3600.0, "gpu", ("a100",)),
                                     ("103", 180.0, 8, 5400.0, "gpu", ())]
    assert len(trace.warnings) == 5 and any("never started" in w for w in trace.warnings)
    # What Slurm did with them, to compare a replay with: JCTs 3605 and 7020 s, waits 5 and
    # 1620 s, 10:00 to 12:00
    assert trace.skipped == 0 and trace.warnings[-1].startswith(
        f"{trace.source}: as recorded, its 2 jobs had a mean JCT of 1.48 h, a mean queueing "
        "delay of 13.5 min and a makespan of 2.00 h")


def test_the_gres_spelling_reads_as_the_tres_one(write: Writer) -> None:
    """squeue and scontrol write ``gres/gpu:a100:4``; pasted into AllocTRES it was refused as
    "not a TRES list"."""
    rows = ROWS.replace("gres/gpu:a100=4,gres/gpu=4", "gres/gpu:a100:4").replace(
        "gres/gpu=8", "gres/gpu:8")
    trace = read_trace(write("gres.sacct", HEADER + rows))
    assert [(j.num_gpus, j.gpu_types) for j in trace.jobs] == [(4, ("a100",)), (8, ())]


@pytest.mark.parametrize("state", ["COMPLETING", "CONFIGURING", "STOPPED"])
def test_a_job_without_an_end_yet_is_left_out_and_counted(write: Writer, state: str) -> None:
    """A started job whose End is still ``Unknown`` (a dump taken while it completes) stopped
    the whole read with "End: not a date-time"."""
    row = (f"105|late|cy|gpu|2026-11-02T10:05:00|2026-11-02T10:30:00|Unknown|{state}|"
           "gres/gpu=2\n")
    trace = read_trace(write("late.sacct", HEADER + ROWS + row))
    assert [j.job_id for j in trace.jobs] == ["100", "103"]
    assert any(f"1 row: not finished ({state}, no End)" in w for w in trace.warnings)


@pytest.mark.parametrize(("end", "work"), [("2026-10-25T02:10:00+0100", 2400.0),
                                           ("2026-10-25T02:10:00", None)],
                         ids=["with-offsets", "local"])
def test_daylight_saving(write: Writer, end: str, work: float | None) -> None:
    """sacct writes local times without an offset: across the end of summer time (02:00-03:00
    twice) a 40-minute job ended "before" it started, with no word of why; with
    SLURM_TIME_FORMAT=%FT%T%z its times carry their offsets and it runs 40 minutes."""
    start = "2026-10-25T02:30:00+0200" if work else "2026-10-25T02:30:00"
    row = f"7|x|a|gpu|{start}|{start}|{end}|COMPLETED|gres/gpu=1\n"
    path = write("dst.sacct", HEADER + row)
    if work is not None:
        assert [j.work for j in read_trace(path).jobs] == [work]
        return
    error = expect_error(path, None, 2, "End")
    assert "SLURM_TIME_FORMAT=%FT%T%z" in str(error)


@pytest.mark.parametrize(("bad", "field"), [
    ("gres/gpu=8", "AllocTRES"), ("2026-11-02T10:30:00|2026-11-02T12", "End"),
], ids=["gpu-count", "end-time"])
def test_bad_values_are_located(write: Writer, bad: str, field: str) -> None:
    broken = {"AllocTRES": "gres/gpu=x",
              "End": "2026-11-02T10:30:00|not-a-time"}[field]
    path = write("bad.sacct", HEADER + ROWS.replace(bad, broken))
    expect_error(path, None, 6, field)


def test_a_missing_required_field_fails_on_the_header(write: Writer) -> None:
    path = write("short.sacct", "JobID|Submit|Start|End|State\n1|x|x|x|COMPLETED\n")
    expect_error(path, "slurm-sacct", 1, "AllocTRES")


# A heterogeneous job: a CPU launcher component and two GPU components (sacct --allocations
# prints one row per component, 200+0 ... 200+2), then an ordinary job.
HET = (
    "200+0|launch|ana|cpu|2026-11-02T10:00:00|2026-11-02T10:10:00|2026-11-02T11:10:00|"
    "COMPLETED|cpu=2,mem=4G,node=1\n"
    "200+1|train|ana|gpu|2026-11-02T10:00:00|2026-11-02T10:10:00|2026-11-02T11:10:00|"
    "COMPLETED|cpu=8,gres/gpu:a100=4,gres/gpu=4,node=1\n"
    "200+1.0|train|ana|gpu|2026-11-02T10:10:00|2026-11-02T10:10:00|2026-11-02T11:10:00|"
    "COMPLETED|cpu=8,gres/gpu=4,node=1\n"
    "200+2|train|ana|gpu|2026-11-02T10:00:00|2026-11-02T10:10:00|2026-11-02T11:10:00|"
    "COMPLETED|cpu=8,gres/gpu:a100=2,gres/gpu=2,node=1\n"
    "201|solo|bo|gpu|2026-11-02T10:05:00|2026-11-02T10:10:00|2026-11-02T10:20:00|COMPLETED|"
    "gres/gpu=1\n")


def test_a_heterogeneous_job_is_one_gang_of_its_components_gpus(write: Writer) -> None:
    """Its components were read as independent jobs (200+1 and 200+2 each started alone in the
    replay, and the CPU component was "left out: no GPUs"): one gang, started whole."""
    trace = read_trace(write("het.sacct", HEADER + HET))
    assert [(j.job_id, j.submit_time, j.num_gpus, j.work, j.gpu_types)
            for j in trace.jobs] == [("200", 0.0, 6, 3600.0, ("a100",)),
                                     ("201", 300.0, 1, 600.0, ())]
    assert any("1 heterogeneous job (200) replayed each as one job of its components' GPUs "
               "summed" in w for w in trace.warnings)
    assert not any("no GPUs" in w for w in trace.warnings)
    assert any("dropped 1 row: job step" in w for w in trace.warnings)
    # as recorded: two jobs, not three
    assert "as recorded, its 2 jobs" in trace.warnings[-1]


@pytest.mark.parametrize(("second", "types", "mixed"), [
    ("gres/gpu:v100=2,gres/gpu=2", ("a100", "v100"), True),
    ("gres/gpu=2", (), True),
    ("gres/gpu:a100=2,gres/gpu=2", ("a100",), False),
], ids=["two-types", "typed-and-untyped", "one-type"])
def test_a_heterogeneous_jobs_gpu_types(write: Writer, second: str, types: tuple[str, ...],
                                        mixed: bool) -> None:
    rows = HET.replace("cpu=8,gres/gpu:a100=2,gres/gpu=2", second)
    trace = read_trace(write("het.sacct", HEADER + rows))
    assert trace.jobs[0].gpu_types == types
    assert any("asked different GPU types" in w for w in trace.warnings) is mixed


# Its queue: one partition for the whole job. HET's launcher asked ``cpu``, its GPU components
# ``gpu``: the first component's (``cpu``) was taken before; now the GPU components'
# partition with the most GPUs (the first on a tie), with a warning where partitions differ.
@pytest.mark.parametrize(("second", "queue"), [
    ("|gpu|", "gpu"),
    ("|big|", "gpu"),
    ("|cpu|", "gpu"),
], ids=["launcher-elsewhere", "fewer-gpus-elsewhere", "fewer-gpus-in-the-launchers"])
def test_a_heterogeneous_jobs_partition(write: Writer, second: str, queue: str) -> None:
    rows = HET.replace("200+2|train|ana|gpu|", f"200+2|train|ana{second}")
    trace = read_trace(write("het.sacct", HEADER + rows))
    assert trace.jobs[0].queue == queue
    assert any("1 heterogeneous job (200) asked different partitions" in w
               for w in trace.warnings)


def test_a_heterogeneous_jobs_partition_of_most_gpus_and_no_warning_for_one(
        write: Writer) -> None:
    rows = HET.replace("200+0|launch|ana|cpu|", "200+0|launch|ana|gpu|").replace(
        "cpu=8,gres/gpu:a100=2,gres/gpu=2", "cpu=8,gres/gpu:a100=8,gres/gpu=8").replace(
        "200+2|train|ana|gpu|", "200+2|train|ana|big|")
    trace = read_trace(write("het.sacct", HEADER + rows))
    assert trace.jobs[0].queue == "big"  # 8 GPUs there, 4 in gpu
    rows = HET.replace("200+0|launch|ana|cpu|", "200+0|launch|ana|gpu|")
    trace = read_trace(write("het.sacct", HEADER + rows))
    assert trace.jobs[0].queue == "gpu"
    assert not any("different partitions" in w for w in trace.warnings)


def test_a_heterogeneous_job_with_a_component_unfinished_is_left_out(write: Writer) -> None:
    rows = HET.replace("2026-11-02T11:10:00|COMPLETED|cpu=8,gres/gpu:a100=2",
                       "Unknown|RUNNING|cpu=8,gres/gpu:a100=2")
    trace = read_trace(write("het.sacct", HEADER + rows))
    assert [j.job_id for j in trace.jobs] == ["201"]
    assert any("not finished (RUNNING)" in w for w in trace.warnings)


# The queue from another field (--sacct-queue): Slurm sites set quotas and fair share per
# account (sacctmgr associations), sometimes per QOS; the queue was always the partition.
ACCOUNTS = ("JobID|User|Account|QOS|Partition|Submit|Start|End|State|AllocTRES\n"
            "1|ana|vision|high|gpu|2026-11-02T10:00:00|2026-11-02T10:00:00|"
            "2026-11-02T11:00:00|COMPLETED|gres/gpu=4\n"
            "2|bo|nlp|normal|gpu|2026-11-02T10:01:00|2026-11-02T10:05:00|"
            "2026-11-02T10:35:00|COMPLETED|gres/gpu=2\n"
            "3|cy||normal|big|2026-11-02T10:02:00|2026-11-02T10:05:00|"
            "2026-11-02T10:15:00|FAILED|gres/gpu=1\n")


@pytest.mark.parametrize(("choice", "queues"), [
    ("partition", ["gpu", "gpu", "big"]),
    ("account", ["vision", "nlp", "default"]),
    ("qos", ["high", "normal", "normal"]),
    ("user", ["ana", "bo", "cy"]),
], ids=["partition", "account", "qos", "user"])
def test_the_queue_is_the_field_asked_for(write: Writer, choice: str,
                                          queues: list[str]) -> None:
    trace = read_trace(write("acct.sacct", ACCOUNTS), None, ReaderOptions(sacct_queue=choice))
    assert [j.queue for j in trace.jobs] == queues  # an empty Account: default


def test_the_default_queue_is_the_partition(write: Writer) -> None:
    assert [j.queue for j in read_trace(write("acct.sacct", ACCOUNTS)).jobs] == [
        "gpu", "gpu", "big"]


@pytest.mark.parametrize(("choice", "field"), [("account", "Account"), ("qos", "QOS"),
                                               ("user", "User")])
def test_a_queue_field_the_file_lacks_fails_on_the_header(write: Writer, choice: str,
                                                          field: str) -> None:
    header, *rows = ACCOUNTS.splitlines(keepends=True)
    at = header.split("|").index(field)
    text = "".join("|".join(p for i, p in enumerate(line.split("|")) if i != at)
                   for line in (header, *rows))
    error = expect_error(write("thin.sacct", text), None, 1, field,
                         ReaderOptions(sacct_queue=choice))
    assert f"--sacct-queue {choice}" in str(error) and "--format" in str(error)


def test_an_unknown_queue_field_and_another_format_are_refused(write: Writer) -> None:
    path = write("acct.sacct", ACCOUNTS)
    with pytest.raises(InputError, match="'cluster' .* not one of partition, account, qos, "
                                         "user"):
        read_trace(path, None, ReaderOptions(sacct_queue="cluster"))
    other = write("jobs.csv", "job_id,submit_time,num_gpus,duration,queue\n1,0,1,60,a\n")
    with pytest.raises(InputError, match="slurm-sacct.*this trace is dlsched-history"):
        read_trace(other, None, ReaderOptions(sacct_queue="account"))


def test_a_heterogeneous_jobs_account_of_most_gpus(write: Writer) -> None:
    """The het rule (GPU components' queue of the most GPUs) picks among the chosen field's
    values: the launcher's account does not count, the 4-GPU component's wins."""
    header = HEADER.replace("|User|", "|User|Account|")
    accounts = ["ops", "vision", "vision", "nlp", "nlp"]  # 200+0, 200+1, its step, 200+2, 201
    rows = "".join(_with_field(line, 3, account)
                   for line, account in zip(HET.splitlines(keepends=True), accounts, strict=True))
    trace = read_trace(write("het.sacct", header + rows), None,
                       ReaderOptions(sacct_queue="account"))
    assert [j.queue for j in trace.jobs] == ["vision", "nlp"]
    assert any("1 heterogeneous job (200) asked different accounts" in w
               and "components' account with the most GPUs" in w for w in trace.warnings)


def _with_field(line: str, at: int, value: str) -> str:
    """``line`` with ``value`` inserted as its field ``at`` (0-based)."""
    fields = line.split("|")
    return "|".join([*fields[:at], value, *fields[at:]])
