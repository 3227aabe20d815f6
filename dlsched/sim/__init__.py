"""The trace-driven discrete-event simulator."""

from dlsched.sim.simulator import SimConfig, Simulator, simulate

__all__ = ["SimConfig", "Simulator", "simulate"]
