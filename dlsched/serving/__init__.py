"""Inference services: request traces, the request-level simulator (continuous batching with a
paged KV cache for LLMs, dynamic batching for DNN models), services files and their metrics.
Service replicas are jobs of kind SERVICE placed by the scheduler core. See docs/inference.md."""
