"""``dlsched reproduce``: each paper's headline comparison regenerated beside its published or
artifact numbers (docs/reproduce.md). Experiments live in ``experiments/``, one module each."""

from dlsched.reproduce.registry import (
    Experiment,
    ExperimentOptions,
    get_experiment,
    register_experiment,
    registered_experiments,
)
from dlsched.reproduce.rows import COLUMNS, Measured, ReproduceRow

__all__ = ["COLUMNS", "Experiment", "ExperimentOptions", "Measured", "ReproduceRow",
           "get_experiment", "registered_experiments", "register_experiment"]
