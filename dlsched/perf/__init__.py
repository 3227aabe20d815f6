"""Throughput models: how fast a job progresses on a given allocation.

The names below are loaded on first use (PEP 562), so that importing a light submodule such as
``dlsched.perf.llm.cli`` (registered by the CLI at start-up) does not load numpy and the
cluster model."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dlsched.perf.model import LinearScaling, Placement, ThroughputModel, get_throughput_model

__all__ = ["LinearScaling", "Placement", "ThroughputModel", "get_throughput_model"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from dlsched.perf import model

        return getattr(model, name)
    raise AttributeError(f"module 'dlsched.perf' has no attribute {name!r}")
