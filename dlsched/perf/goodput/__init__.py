"""Pollux's goodput model (Qiao et al., OSDI'21 §3): fitted iteration time × statistical
efficiency, the batch that maximizes it, and training progress at goodput. See docs/goodput.md.

One concept per module: ``iteration_time`` (T_iter), ``measurements`` and ``fit`` (fitting it to
Pollux/Sia step times), ``efficiency`` (gradient noise scale), ``goodput`` (goodput and its best
batch), ``progress`` (advancing a job), ``bundle`` (the bundled data), ``throughput_model``
(the registered ``goodput`` model), ``run_table`` (a run tabulated along training progress).
"""

from dlsched.perf.goodput.efficiency import GradientStats, efficiency
from dlsched.perf.goodput.fit import FitError, fit_error, fit_perf_params
from dlsched.perf.goodput.goodput import BatchConfig, BatchLimits, GoodputFunction
from dlsched.perf.goodput.iteration_time import PerfParams, iteration_time, throughput
from dlsched.perf.goodput.progress import Advance, advance, seconds_to_progress
from dlsched.perf.goodput.run_table import RunTable
from dlsched.perf.goodput.throughput_model import (
    GoodputSample,
    GoodputThroughputs,
    goodput_function,
)

__all__ = [
    "Advance", "BatchConfig", "BatchLimits", "FitError", "GoodputFunction", "GoodputSample",
    "GoodputThroughputs", "GradientStats", "PerfParams", "RunTable", "advance", "efficiency",
    "fit_error", "fit_perf_params", "goodput_function", "iteration_time", "seconds_to_progress",
    "throughput",
]
