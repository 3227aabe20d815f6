"""Executors of the runtime: they make the core's decisions real (local subprocesses now; Ray
later)."""
