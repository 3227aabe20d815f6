"""A real LLM service on CPU and its comparison with the simulator (issue 16, item 7)."""
