"""Inference step times: prefill and decode iteration times of LLM replicas, interpolated from
measured profiles (Splitwise, ISCA'24), KV-cache capacity, and batch latency tables of DNN models.
See docs/inference.md."""
