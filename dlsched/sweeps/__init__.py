"""Sweeps: policies × traces × clusters × seeds × options, run in parallel (local processes or
Ray) and resumably; ``dlsched sweep`` and ``dlsched.sweep``."""
