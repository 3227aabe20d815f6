"""dlsched's shared stylesheet (``theme.css``): the dashboard serves it, the HTML report of
``compare`` embeds it."""

from __future__ import annotations

from functools import cache
from pathlib import Path

THEME_PATH = Path(__file__).with_name("theme.css")


@cache
def theme_css() -> str:
    return THEME_PATH.read_text()
