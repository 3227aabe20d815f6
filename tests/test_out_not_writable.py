"""`--out` that cannot be written is one `error:` line, not a traceback: `dlsched reproduce
tiresias-nsdi19 --out FILE` ran its six simulations and then died with NotADirectoryError;
`dlsched tenants ... --out /no/such/dir/t.yaml` with FileNotFoundError."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from dlsched.cli import app


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["reproduce", "tiresias-nsdi19", "--out", "{file}"],
                 "error: --out {file}: cannot create the folder", id="reproduce-out-a-file"),
    pytest.param(["tenants", "philly-sample", "--cluster", "philly", "--out",
                  "{file}/t.yaml"], "error: --out {file}/t.yaml: cannot write",
                 id="tenants-out-under-a-file"),
])
def test_an_unwritable_out_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = CliRunner().invoke(app, [a.format(file=blocker) for a in args])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert message.format(file=blocker) in " ".join(result.output.split())
