"""Link levels between two GPUs and their bandwidths."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class LinkLevel(enum.IntEnum):
    """How far apart two GPUs are; a larger value is a slower link."""

    SAME_GPU = 0
    NVLINK = 1
    PCIE = 2
    RACK = 3
    NETWORK = 4


@dataclass(frozen=True, slots=True)
class Topology:
    """Bandwidth in GB/s of each link level (NVLink domain, PCIe within a node, rack, spine)."""

    nvlink_gbps: float = 150.0
    pcie_gbps: float = 16.0
    rack_gbps: float = 12.5
    network_gbps: float = 3.125

    def bandwidth(self, level: LinkLevel) -> float:
        return {
            LinkLevel.SAME_GPU: float("inf"),
            LinkLevel.NVLINK: self.nvlink_gbps,
            LinkLevel.PCIE: self.pcie_gbps,
            LinkLevel.RACK: self.rack_gbps,
            LinkLevel.NETWORK: self.network_gbps,
        }[level]
