"""A sweep checks every trace, cluster and policy of its grid before its first run: a typo in
the last of them ended the sweep only after the runs before it (``--policies fifo,nope`` ran
every fifo run first)."""

from __future__ import annotations

from pathlib import Path

import pytest

import dlsched
from dlsched.errors import DlschedError

GRID = {"traces": ["pollux-1"], "clusters": ["pollux-64"], "policies": ["fifo"],
        "options": {"limit": 3}}
POLICY_FILE = '''
from dlsched.scheduling.registry import register_policy
from dlsched.policies.fifo import fifo


@register_policy("preflight-first")
def preflight_first(strict: bool = False):
    """FIFO under another name (a user's policy file)."""
    return fifo()
'''


@pytest.mark.parametrize(("change", "message"), [
    ({"traces": ["pollux-1", "no-such-trace"]}, "no-such-trace: no such file, and not a bundled"),
    ({"traces": ["pollux-1", "synthetic:nope"]}, "nope: no such file, and not a bundled"),
    ({"clusters": ["pollux-64", "no-such-cluster"]}, "unknown cluster 'no-such-cluster'"),
    ({"policies": ["fifo", "nope"]}, "unknown policy 'nope'"),
    ({"policies": ["fifo", "tiresias"], "vary": {"tiresias:thresholds": ["600", "abc"]}},
     "policy tiresias: option thresholds='abc' is not valid"),
], ids=["trace", "synthetic-source", "cluster", "policy", "policy-option-value"])
def test_a_bad_input_fails_before_any_run(tmp_path: Path, change: dict[str, object],
                                          message: str) -> None:
    with pytest.raises(DlschedError, match=message):
        dlsched.sweep(**{**GRID, **change}, out=tmp_path, workers=1, plots=False)
    assert not (tmp_path / "done").exists()


def test_options_of_a_policy_from_a_policy_file(tmp_path: Path) -> None:
    """``--set policy_files=F --policy-opt mine:key=v`` was refused ('no policy of mine has
    it'): the grid checked the option before the file was loaded."""
    path = tmp_path / "mine.py"
    path.write_text(POLICY_FILE)
    options = {**GRID["options"], "policy_files": [str(path)],
               "policy_options": ["preflight-first:strict=true"]}
    table = dlsched.sweep(**{**GRID, "policies": ["preflight-first"], "options": options,
                             "vary": {"preflight-first:strict": ["true", "false"]}},
                          out=tmp_path / "out", workers=1, plots=False)
    assert len(table) == 2 and table["jobs_finished"].tolist() == [3, 3]


def test_an_out_that_cannot_be_a_folder_is_one_line(tmp_path: Path) -> None:
    """``--out FILE`` ended in a FileExistsError traceback."""
    from typer.testing import CliRunner

    from dlsched.cli import app

    taken = tmp_path / "a-file"
    taken.write_text("")
    result = CliRunner().invoke(app, ["sweep", "--trace", "pollux-1", "--cluster", "pollux-64",
                                      "--policies", "fifo", "--set", "limit=3", "--workers",
                                      "1", "--out", str(taken)])
    assert result.exit_code == 2
    assert result.output.splitlines()[-1].startswith(f"error: --out {taken}: cannot create "
                                                     "the folder")


@pytest.mark.parametrize(("change", "message"), [
    (["--trace", "no-such-trace"], "error: no-such-trace: no such file"),
    (["--policies", "fifo,nope"], "error: unknown policy 'nope'"),
    (["--cluster", "no-such-cluster"], "error: unknown cluster 'no-such-cluster'"),
], ids=["trace", "policy", "cluster"])
def test_a_bad_input_is_the_only_line_printed(tmp_path: Path, change: list[str],
                                              message: str) -> None:
    """The header ("sweep -> OUT on 2 local processes") came before the up-front checks, so a
    typo printed it and then the error, as if the sweep had started; now the error is alone,
    and the header, once the inputs pass, counts the runs."""
    from typer.testing import CliRunner

    from dlsched.cli import app

    args = {"--trace": "pollux-1", "--cluster": "pollux-64", "--policies": "fifo"}
    args.update(dict(zip(change[::2], change[1::2], strict=True)))
    flat = [part for pair in args.items() for part in pair]
    result = CliRunner().invoke(app, ["sweep", *flat, "--set", "limit=3", "--workers", "1",
                                      "--no-plots", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), result.output
    good = CliRunner().invoke(app, ["sweep", "--trace", "pollux-1", "--cluster", "pollux-64",
                                    "--policies", "fifo", "--set", "limit=3", "--workers", "1",
                                    "--no-plots", "--out", str(tmp_path / "o")])
    assert good.exit_code == 0 and good.output.startswith(
        f"sweep of 1 run -> {tmp_path / 'o'} in this process"), good.output
