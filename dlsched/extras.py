"""Optional extras: which modules each needs, and one clear line when one is missing.

``require("runtime", "dlsched serve")`` raises ``MissingExtra`` (a ``DlschedError``: the CLI
prints it as one line and exits 2) naming what to install, before anything starts; ``extra_of``
maps a missing module (a ``ModuleNotFoundError``'s name) back to its extra, for the CLI's last
line of defence.
"""

from __future__ import annotations

import importlib.util

from dlsched.errors import DlschedError

EXTRAS: dict[str, tuple[str, ...]] = {
    "runtime": ("fastapi", "uvicorn", "sqlalchemy", "httpx", "pydantic", "prometheus_client",
                "jinja2"),
    "parquet": ("pyarrow",),
    "torch": ("torch",),
    "ray": ("ray",),
}
CLIENT = ("httpx", "pydantic")  # what the client verbs (submit, jobs, ...) import


class MissingExtra(DlschedError, ImportError):
    """An optional dependency is not installed."""


def install_hint(extra: str) -> str:
    return f"pip install 'dlsched[{extra}]'"


def missing(modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if _absent(m)]


def _absent(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except (ImportError, ValueError):  # a parent package missing, or a broken entry
        return True


def require(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise ``MissingExtra`` unless every module of ``extra`` (or just ``modules``) can be
    imported."""
    absent = missing(modules if modules is not None else EXTRAS[extra])
    if absent:
        raise MissingExtra(message(extra, what, absent[0]))


def message(extra: str, what: str, module: str) -> str:
    return (f"{what} needs the {extra} extra (no module named {module!r}): "
            f"{install_hint(extra)}")


def extra_of(module: str | None) -> str | None:
    """The extra that provides ``module`` (or its top-level package), if any."""
    top = (module or "").split(".")[0]
    for extra, modules in EXTRAS.items():
        if top in modules:
            return extra
    return None
