"""A Gavel-format trace on a cluster of a GPU type Gavel never measured is one sentence that
lists the types as words and says where such jobs run: it read "(known: ('k80', 'p100',
'v100'))", a tuple's repr, with no way forward."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from dlsched.cli import app


def test_a_gavel_trace_on_t4_names_the_measured_types(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["simulate", "--trace", "gavel-max-min-fairness",
                                      "--cluster", "pollux-64", "--limit", "5", "--out",
                                      str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert ("gavel table has no GPU type 'T4' (known: k80, p100, v100): Gavel measured its "
            "jobs on those alone; run them on a cluster of these types, e.g. gavel-108") in text
