"""Generic plugins: filters, placement scores, gang permit, preemption."""
