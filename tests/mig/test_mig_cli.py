"""``dlsched mig``: the report of a MIG job file, and a bad row as one error line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dlsched.cli import app

HEADER = "job_id,submit_time,duration,mig_profile\n"


def test_report_as_json(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "jobs.csv"
    path.write_text(HEADER + "a,0,100,1g\nb,1,10,7g\nc,2,100,1g\n")
    result = CliRunner().invoke(app, ["mig", str(path), "--gpus", "1", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["drains"] == 1 and report["placed_by_profile"]["7g.40gb"] == 1


def test_unknown_profile_names_file_line_and_field(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "jobs.csv"
    path.write_text(HEADER + "a,0,100,9g\n")
    result = CliRunner().invoke(app, ["mig", str(path)])
    assert result.exit_code == 2
    flat = "".join(result.output.split())  # rich wraps long lines anywhere
    assert "jobs.csv:2:mig_profile:unknownMIGprofile'9g'" in flat


def test_a_repeated_job_id_is_one_error_line_not_a_traceback(tmp_path) -> None:  # noqa: ANN001
    # It was a KeyError traceback from the run, and rich wrapped error lines at 80 columns.
    path = tmp_path / "jobs.csv"
    path.write_text(HEADER + "a,0,100,1g\na,5,100,2g\n")
    result = CliRunner().invoke(app, ["mig", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: {path}:3:job_id: job id 'a' is used twice: on line 2 and on line 3"]


def test_a_clusters_gpu_type_name_is_a_mig_gpu_type(tmp_path) -> None:  # noqa: ANN001
    """``--gpu-type A100-80G`` (the name clusters and the docs give the type) was "GPU type
    'A100-80G' has no MIG profiles"."""
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,submit_time,duration,mig_profile\na,0,10,3g.40gb\n")
    result = CliRunner().invoke(app, ["mig", str(jobs), "--gpus", "1", "--gpu-type",
                                       "A100-80G", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["placed_by_profile"] == {"3g.40gb": 1}
    result = CliRunner().invoke(app, ["mig", str(jobs), "--gpu-type", "V100"])
    assert result.exit_code == 2 and "has no MIG profiles" in result.output


def test_the_text_report_reads_as_text_not_python(tmp_path) -> None:  # noqa: ANN001
    """It printed ``placed_by_profile: {'3g.20gb': 1}`` and ``slice_utilization:
    0.4782608695652174``."""
    path = tmp_path / "jobs.csv"
    path.write_text(HEADER + "a,0,100,3g.20gb\nb,3,10,4g\nc,5,80,1g.5gb\nd,10,50,7g.40gb\n")
    result = CliRunner().invoke(app, ["mig", str(path), "--gpus", "1"])
    assert result.exit_code == 0, result.output
    lines = dict(line.split(": ", 1) for line in result.output.strip().splitlines())
    assert lines["placed_by_profile"] == "1g.5gb 1, 3g.20gb 1, 4g.20gb 1, 7g.40gb 1"
    assert lines["waiting_at_end"] == "none"
    assert lines["slice_utilization"] == "0.4783"


def test_simulate_prints_the_slices_used_beside_the_gpus(tmp_path) -> None:  # noqa: ANN001
    """One 1g instance on a single A100 for 100 s printed "utilization 100.0%": a GPU in MIG
    mode counts as wholly busy, and the line had no word of its 1 slice in 7."""
    jobs, cluster = tmp_path / "jobs.csv", tmp_path / "a100.yaml"
    jobs.write_text(HEADER + "a,0,100,1g\n")
    cluster.write_text("name: a100\nnodes:\n  - {name: n, gpu_type: A100, gpus: 1}\n")
    result = CliRunner().invoke(app, ["simulate", "--trace", str(jobs), "--cluster",
                                      str(cluster), "--policy", "fifo", "--out",
                                      str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "utilization 100.0% (MIG slices 14.3%)" in " ".join(result.output.split())


def test_a_huge_gpu_count_is_refused_at_once(tmp_path) -> None:  # noqa: ANN001
    """``--gpus 100000000`` built 10^8 GPUs: 4.5 GB and over a minute before anything."""
    path = tmp_path / "jobs.csv"
    path.write_text(HEADER + "a,0,100,1g\n")
    result = CliRunner().invoke(app, ["mig", str(path), "--gpus", "100000000"])
    assert result.exit_code == 2
    assert "--gpus" in result.output and "1000000" in result.output
