"""Per tenant (queue) table of the HTML report: for each queue, its jobs and, per run, the
mean JCT and mean queueing delay of its jobs, so runs with and without quotas compare tenant by
tenant (issue 6: "mean JCT per tenant"). Shown when the runs have two or more queues."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from html import escape

from dlsched.report.job_table import JobTable, job_table
from dlsched.report.metrics import jct_by_queue, wait_by_queue
from dlsched.report.plots import run_label
from dlsched.sim.result import SimulationResult
from dlsched.wording import duration_text


def tenant_table(results: Sequence[SimulationResult],
                 tables: Sequence[JobTable] | None = None) -> str:
    """The table, or nothing with fewer than two queues; ``tables``: each run's jobs as
    columns, when the caller has made them."""
    if not results:
        return ""
    if tables is None:
        tables = [job_table(r.jobs) for r in results]
    jobs: Counter[str] = Counter(tables[0].queue)
    if len(jobs) < 2:
        return ""
    columns = [(run_label(r), jct_by_queue(r, t), wait_by_queue(r, t))
               for r, t in zip(results, tables, strict=True)]
    head = "".join(f"<th>{escape(label)}: JCT</th><th>{escape(label)}: wait</th>"
                   for label, _, _ in columns)
    rows = []
    for queue in sorted(jobs):
        cells = "".join(_cell(jct.get(queue)) + _cell(wait.get(queue))
                        for _, jct, wait in columns)
        rows.append(f"<tr><td>{escape(queue)}</td><td>{jobs[queue]}</td>{cells}</tr>")
    return ("<h2>Per tenant (queue)</h2>\n<table>\n<thead><tr><th>queue</th><th>jobs</th>"
            + head + "</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>")


def _cell(seconds: float | None) -> str:
    """Seconds in the unit their size reads best in, as the summary and the console."""
    return "<td>–</td>" if seconds is None else f"<td>{escape(duration_text(seconds))}</td>"
