"""Throughput models: how fast a job progresses on a given allocation."""

from dlsched.perf.model import LinearScaling, Placement, ThroughputModel, get_throughput_model

__all__ = ["LinearScaling", "Placement", "ThroughputModel", "get_throughput_model"]
