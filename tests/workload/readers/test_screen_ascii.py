"""``TextLines._screen``: an ASCII line is screened without the regex, to the same answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from dlsched import textinput
from dlsched.textinput import TextLines


def _screened(path: Path, text: str) -> list[bool]:
    path.write_text(text, encoding="utf-8", newline="")
    lines, flags = TextLines(path), []
    for _ in lines:
        flags.append(lines.suspect)
        lines.suspect = False
    return flags


def test_ascii_lines_flag_what_the_regex_flags_without_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    searched = []

    class Counted:
        def search(self, *args):  # type: ignore[no-untyped-def]
            searched.append(args)
            return textinput._SUSPECT_PATTERN.search(*args)

    monkeypatch.setattr(textinput, "_SUSPECT_PATTERN", textinput._SUSPECT, raising=False)
    monkeypatch.setattr(textinput, "_SUSPECT", Counted())
    controls = [chr(c) for c in [*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f] if c != 0x0d]
    text = "a\tb\t1\n" + "".join(f"x{c}y\n" for c in controls) + "last\r\n" + "tail\r"
    flags = _screened(tmp_path / "t.tsv", text)
    assert flags[0] is False and all(flags[1:1 + len(controls)])
    assert flags[1 + len(controls)] is False  # "\r\n" ends the line
    assert flags[-1] is True  # a lone carriage return ends it, and is screened
    assert searched == []
    flags = _screened(tmp_path / "u.tsv", "caf\u00e9\t1\n\u0085x\n\ufeffy\n")
    assert flags == [False, True, True] and len(searched) == 3
