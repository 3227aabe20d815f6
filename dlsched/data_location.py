"""Where dlsched finds its data, wherever the checkout or the installed package lives.

Two places, in this order:

1. the **data directory**, for data too large or not licensed to ship (the full Philly
   trace, Sia's profiles): set by ``set_data_dir(path)`` or else the ``DLSCHED_DATA``
   environment variable, laid out like ``dlsched/data`` (``traces/...``, ``profiles/...``);
2. the **bundled data** inside the package, ``dlsched/data``.

Nothing is looked up relative to the working directory or to the checkout, so a run gives the
same result wherever it starts; a model that needs data found in neither place says so
(``DataNotFound``, or a ``DataWarning`` where it falls back to something bundled).
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

from dlsched.errors import ConfigError

ENV = "DLSCHED_DATA"
_explicit: Path | None = None


class DataNotFound(ConfigError):
    """Data a model or trace needs is in neither the data directory nor the bundled data."""


class DataWarning(UserWarning):
    """Data a model would use is missing: it falls back to something bundled (results differ)."""


def set_data_dir(path: str | Path | None) -> None:
    """Use ``path`` as the data directory (None: back to ``$DLSCHED_DATA``)."""
    global _explicit
    _explicit = None if path is None else Path(path).expanduser().resolve()


def data_dir() -> Path | None:
    """The data directory: the explicit setting, else ``$DLSCHED_DATA``; None when neither is
    set. A set directory that does not exist is an error, not a silent fallback."""
    if _explicit is not None:
        chosen, source = _explicit, "set_data_dir"
    elif os.environ.get(ENV):
        chosen, source = Path(os.environ[ENV]).expanduser().resolve(), f"${ENV}"
    else:
        return None
    if not chosen.is_dir():
        raise DataNotFound(f"{source}: {chosen} is not a directory")
    return chosen


def bundled_dir() -> Path:
    """``dlsched/data`` inside the installed package."""
    return Path(str(resources.files("dlsched.data")))


def find_data(relative: str) -> Path | None:
    """``relative`` (e.g. ``profiles/sia``) under the data directory, else under the bundled
    data; None when it is in neither."""
    root = data_dir()
    for base in (root, bundled_dir()):
        if base is not None and (base / relative).exists():
            return base / relative
    return None


def require_data(relative: str, needed_by: str) -> Path:
    """``find_data(relative)``, or a ``DataNotFound`` that says what needs it and where it was
    looked for."""
    found = find_data(relative)
    if found is None:
        raise DataNotFound(f"{needed_by} needs {relative}, found in neither {where()}")
    return found


def where() -> str:
    """The places searched, for messages."""
    root = _explicit or (os.environ.get(ENV) and Path(os.environ[ENV]))
    first = f"the data directory {root}" if root else f"a data directory (${ENV} is not set)"
    return f"{first} nor the bundled data ({bundled_dir()})"
