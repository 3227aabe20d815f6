"""Heavy optional modules imported on first use, not when dlsched's modules load.

Every policy module is imported to register it, so a module-level ``import highspy`` made
every command pay for HiGHS and SciPy (about a second of a simulate run on the dev machine)
even when no policy used them. ``lazy_import`` returns the module through ``importlib``'s
``LazyLoader``: the name is bound at once, the module runs on its first attribute access.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """``name``, loaded when first used (the module itself when already imported)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def highs_solver() -> object:
    """A new HiGHS solver (highspy's ``_Highs`` where present: no Python wrapper overhead)."""
    highspy = lazy_import("highspy")
    return getattr(highspy, "_Highs", highspy.Highs)()
