"""Analytic performance model of large-model training: FLOPs, memory, communication and the
per-iteration time of a (DP, TP, PP, micro-batch, ZeRO) configuration; the parallelism planner.

See docs/llm.md for the formulas, their papers and the checks against published runs."""
