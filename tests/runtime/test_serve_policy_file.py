"""``dlsched serve --policy-file``: a lab's policy outside the package runs in the service as in
``simulate`` (docs/scheduling.md, "Policies outside the package"); before, serve had no way
to name one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import Live, wait_for, worker
from typer.testing import CliRunner

from dlsched.runtime.cli import runtime_app
from dlsched.runtime.server import local_cluster
from dlsched.runtime.service import Service, ServiceConfig

runner = CliRunner()

LAB = '''
from dlsched.scheduling.profile import Profile
from dlsched.scheduling.registry import register_policy


class Fewest:
    name = "fewest-gpus"
    static = True

    def sort_key(self, state, job):
        return (job.spec.num_gpus, job.spec.submit_time, job.job_id)


@register_policy("lab-serve-fewest")
def fewest(aging: float = 60.0, placement: str = "consolidated") -> Profile:
    """Fewest GPUs first (a lab's policy)."""
    return Profile("lab-serve-fewest", Fewest(), placement=placement)
'''


class Bound(Exception):
    """Raised where serve binds its port: every check before it passed."""


def serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str]:
    from dlsched.runtime import server

    def bind(host: str, port: int) -> None:
        raise Bound

    monkeypatch.setattr(server, "bind", bind)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(runtime_app, ["serve", "--gpus", "2", "--port", "0",
                                         "--data-dir", str(tmp_path / "data"), *args])
    return result.exit_code, result.output if not isinstance(result.exception, Bound) else "bound"


def test_serve_takes_a_policy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lab.py").write_text(LAB)
    code, output = serve(tmp_path, monkeypatch, "--policy", "lab-serve-fewest",
                         "--policy-file", "lab.py", "--policy-opt", "aging=30")
    assert output == "bound", output


@pytest.mark.parametrize(("args", "message"), [
    (["--policy-file", "nowhere.py"], "error: --policy-file: policy file nowhere.py: no such file"),
    (["--policy-file", "lab.py", "--policy-opt", "agin=3"],
     "error: --policy-opt: policy lab-serve-fewest3: unknown option 'agin'"),
], ids=["missing-file", "bad-option"])
def test_a_bad_policy_file_or_option_is_one_line(args: list[str], message: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lab.py").write_text(LAB.replace("lab-serve-fewest", "lab-serve-fewest3"))
    code, output = serve(tmp_path, monkeypatch, "--policy", "lab-serve-fewest3", *args)
    assert code == 1, output
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), output


def test_the_service_builds_the_files_policy(tmp_path: Path) -> None:
    (tmp_path / "lab2.py").write_text(LAB.replace("lab-serve-fewest", "lab-serve-fewest2"))
    config = ServiceConfig(local_cluster(2, "T4"), tmp_path / "data", policy="lab-serve-fewest2",
                           policy_files=(str(tmp_path / "lab2.py"),))
    assert Service(config).profile.name == "lab-serve-fewest2"


RAISES = LAB.replace("lab-serve-fewest", "lab-serve-raises").replace(
    "        return (job.spec.num_gpus,",
    "        if job.job_id == 'job-000003':\n"
    "            raise RuntimeError('boom')\n"
    "        return (job.spec.num_gpus,").replace("static = True", "static = False")


def test_a_policy_files_bug_in_the_service_is_one_line_and_the_jobs_reason(
        live: Callable[..., Live], tmp_path: Path, out: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    """The policy file's sort_key raising in the live service: a 20-line traceback was logged
    at each retry, the job said "not reached by the last cycle", and GET /v1/jobs/ID (its
    place in line) answered 500."""
    (tmp_path / "raises.py").write_text(RAISES)
    handle = live(gpus=2, policy="lab-serve-raises",
                  policy_files=(str(tmp_path / "raises.py"),))
    ids = [post(handle, worker("sleep", out, 2.0), 2), post(handle, worker("sleep", out, 0.1), 1),
           post(handle, worker("sleep", out, 0.1), 1)]
    reason = wait_for(lambda: "boom" in (r := str(detail(handle, ids[2]).get("pending_reason")))
                      and r, 20.0, "the policy's error as the job's reason")
    assert reason.startswith(f"scheduling cycle failed: policy file {tmp_path / 'raises.py'}: "
                             "line 12 in sort_key: RuntimeError: boom (policy lab-serve-raises,"
                             " job job-000003, t="), reason
    failures = [r for r in caplog.records if "scheduling cycle failed" in r.getMessage()]
    assert len(failures) == 1 and not failures[0].exc_info, caplog.text
    assert detail(handle, ids[2])["queue_position"] is None


def post(live: Live, command: list[str], gpus: int) -> str:
    response = live.http.post("/v1/jobs", json={"command": command, "gpus": gpus})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def detail(live: Live, job_id: str) -> dict[str, Any]:
    response = live.http.get(f"/v1/jobs/{job_id}")
    assert response.status_code == 200, response.text
    return dict(response.json())
