"""Trace readers, one module per format, found through a registry (``@register_reader``)."""

from dlsched.workload.readers.base import (
    READERS,
    ReaderOptions,
    TraceReader,
    detect_format,
    read_trace,
    register_reader,
)

__all__ = ["READERS", "ReaderOptions", "TraceReader", "detect_format", "read_trace",
           "register_reader"]
