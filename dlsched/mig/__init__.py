"""NVIDIA Multi-Instance GPU (MIG): partition rules, MIG-aware placement and its report."""
