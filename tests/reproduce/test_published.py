"""published.csv: every number cites its source; a bad row names its file, line and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched.errors import InputError
from dlsched.reproduce.published import published, read_published

HEADER = "experiment,case,policy,metric,value,source\n"


def test_bundled_references_load_and_each_cites_a_source() -> None:
    table = published()
    assert table[("pollux-osdi21", "workload-6@1.0", "tiresias", "jct_mean_s")].value == \
        pytest.approx(3469.69, abs=0.01)  # the artifact README's "Average JCT: 3469.69375"
    assert all(reference.source for reference in table.values())


@pytest.mark.parametrize(("row", "where"), [
    pytest.param("e,c,p,m,abc,src\n", "t.csv:2:value", id="not-a-number"),
    pytest.param("e,c,p,m,1.0,\n", "t.csv:2:source", id="no-source"),
    pytest.param("e,,p,m,1.0,src\n", "t.csv:2:case", id="empty-case"),
    pytest.param("e,c,p,m,1.0\n", "t.csv:2", id="short-row"),
    pytest.param("e,c,p,m,1.0,a\ne,c,p,m,2.0,b\n", "t.csv:3", id="duplicate"),
])
def test_bad_rows_name_file_line_and_field(tmp_path: Path, row: str, where: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text(HEADER + row)
    with pytest.raises(InputError) as caught:
        read_published(path)
    assert str(caught.value).startswith(str(tmp_path / where))


def test_comment_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "# a group\ne,c,p,m,2.5,paper Table 3\n")
    assert read_published(path)[("e", "c", "p", "m")].value == 2.5
