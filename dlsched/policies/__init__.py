"""Scheduling policies from the literature, one module per paper, each a registered Profile."""
