"""Pages of docs/ that the package names (help texts, messages, comments) exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_docs_page_the_package_names_exists() -> None:
    named = {m for path in (ROOT / "dlsched").rglob("*.py")
             for m in re.findall(r"docs/[A-Za-z0-9_/-]+\.md", path.read_text(encoding="utf-8"))}
    assert named, "no docs/ reference found: the pattern is wrong"
    assert sorted(p for p in named if not (ROOT / p).is_file()) == []

