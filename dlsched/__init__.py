"""dlsched: resource allocation and workload scheduling for distributed deep learning.

In a notebook: ``dlsched.simulate(...)``, ``dlsched.compare(...)`` and ``dlsched.sweep(...)``
(``dlsched/notebook.py``, ``dlsched/sweeps/``). They are imported on first use, so that
``import dlsched`` (and every ``dlsched`` command) stays fast.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"
__all__ = ["__version__", "compare", "simulate", "sweep"]

_LAZY = {"simulate": "dlsched.notebook", "compare": "dlsched.notebook",
         "sweep": "dlsched.sweeps.api"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dlsched' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
