"""dlsched: resource allocation and workload scheduling for distributed deep learning."""

__version__ = "0.1.0"
