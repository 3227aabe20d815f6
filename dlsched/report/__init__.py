"""Reports of simulation runs: summary metrics, output files, plots and an HTML page."""

from dlsched.report.html import render_report, write_report
from dlsched.report.metrics import Summary, jct_by_queue, summarize, timeline_integral
from dlsched.report.output import ParquetUnavailable, deterministic_view, write_run
from dlsched.report.plots import jct_cdf_svg, queue_length_svg, utilization_svg

__all__ = [
    "ParquetUnavailable",
    "Summary",
    "deterministic_view",
    "jct_by_queue",
    "jct_cdf_svg",
    "queue_length_svg",
    "render_report",
    "summarize",
    "timeline_integral",
    "utilization_svg",
    "write_report",
    "write_run",
]
