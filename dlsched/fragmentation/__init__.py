"""GPU fragmentation and fragmentation-aware placement (FGD, Weng et al., USENIX ATC'23) with
the paper's baselines, as score plugins any policy can use (docs/sharing.md)."""

from __future__ import annotations

from dlsched.fragmentation.base import SharingScore
from dlsched.fragmentation.baselines import (
    BestFitScore,
    DotProductScore,
    GpuClusteringScore,
    GpuPackingScore,
    RandomScore,
)
from dlsched.fragmentation.fgd import FgdScore
from dlsched.fragmentation.measure import TaskMix, fragmentation
from dlsched.fragmentation.view import Demand, NodeView

# Placement names (``--placement``) -> plugin class, in the paper's order (ATC'23 Fig. 7).
SHARING_PLACEMENTS: dict[str, type[SharingScore]] = {
    "random": RandomScore,
    "dot-product": DotProductScore,
    "gpu-clustering": GpuClusteringScore,
    "gpu-packing": GpuPackingScore,
    "cpu-gpu-best-fit": BestFitScore,
    "fgd": FgdScore,
}

__all__ = ["SHARING_PLACEMENTS", "BestFitScore", "Demand", "DotProductScore", "FgdScore",
           "GpuClusteringScore", "GpuPackingScore", "NodeView", "RandomScore", "SharingScore",
           "TaskMix", "fragmentation"]
