"""Known GPU types: memory and a rough relative speed (V100 = 1.0) for duration traces.

``relative_speed`` is only used by the linear throughput model when a trace gives durations but
the cluster is heterogeneous; measured tables (Gavel, Sia) override it per model. Figures are
FP32 training speedups commonly reported for ResNet-50-class models, rounded.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class GpuType:
    name: str
    memory_gb: float
    relative_speed: float = 1.0


GPU_TYPES: dict[str, GpuType] = {
    t.name: t
    for t in (
        GpuType("K80", 12, 0.25),
        GpuType("M40", 24, 0.35),
        GpuType("P40", 24, 0.55),
        GpuType("P100", 16, 0.6),
        GpuType("T4", 16, 0.45),
        GpuType("V100", 16, 1.0),
        GpuType("V100M16", 16, 1.0),
        GpuType("V100M32", 32, 1.0),
        GpuType("RTX2080Ti", 11, 0.8),
        GpuType("RTX6000", 24, 0.9),
        GpuType("A10", 24, 1.1),
        GpuType("G2", 32, 1.0),
        GpuType("G3", 48, 1.3),
        GpuType("MISC", 12, 0.25),  # Alibaba PAI 2020's older generations (K40m, K80, M60)
        GpuType("A100", 40, 2.2),
        GpuType("A100-80G", 80, 2.3),
        GpuType("H100", 80, 3.5),
    )
}


def gpu_type(name: str) -> GpuType:
    """A known type, or a new one with unknown speed (1.0) so that user clusters still load."""
    known = GPU_TYPES.get(name)
    return known if known is not None else GpuType(name, 0.0, 1.0)
