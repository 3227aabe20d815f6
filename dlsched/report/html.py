"""A self-contained HTML report comparing runs: a summary table and three inline SVG plots.

Standard library and matplotlib only. The page carries no date, so the same runs give the same
page apart from the wall-clock column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Literal

from dlsched.report.fairness import FairnessInputs
from dlsched.report.job_table import JobTable, job_table
from dlsched.report.metrics import Summary, summarize
from dlsched.report.numbers import display
from dlsched.report.plots import jct_cdf_svg, queue_length_svg, run_label, utilization_svg
from dlsched.report.tenants_table import tenant_table
from dlsched.report.theme import theme_css
from dlsched.sim.result import SimulationResult
from dlsched.wording import duration_text


@dataclass(frozen=True)
class Column:
    """One numeric column of the summary table; ``better`` says which end is highlighted."""

    header: str
    value: Callable[[Summary], float | None]
    better: Literal["low", "high"]
    integer: bool = False
    duration: bool = False  # seconds, written in the unit their size reads best in

    def format(self, value: float) -> str:
        if self.duration:
            return duration_text(value)
        return f"{int(value):d}" if self.integer else display(value)

    def text(self, summary: Summary) -> str:
        value = self.value(summary)
        return "–" if value is None else self.format(value)


def _time(header: str, field: str) -> Column:
    """A column of seconds, each shown as the console shows it (``wording.duration_text``:
    "5.3 s", "12.5 min", "2.35 h"): hours alone read "mean JCT 0.00146 h" for a service's
    short jobs where the console said 5.3 s. Lower is better; the best is picked on the
    seconds and highlighted as written, so runs that read alike tie."""
    return Column(header, lambda summary: getattr(summary, field), "low", duration=True)


def _percent_of(fraction: float | None) -> float | None:
    return None if fraction is None else 100.0 * fraction


def _percent(summary: Summary) -> float | None:
    return _percent_of(summary.utilization)


# Columns over finished jobs only: runs that finished different numbers of jobs are not
# compared on them (a run that leaves its slowest jobs unfinished would look best).
FINISHED_ONLY = (
    _time("mean JCT", "jct_mean"),
    _time("median JCT", "jct_median"),
    _time("p95 JCT", "jct_p95"),
    _time("p99 JCT", "jct_p99"),
    _time("mean total wait", "wait_total_mean"),
    _time("makespan", "makespan"),
)
COMPLETION = (
    Column("jobs finished", lambda s: s.jobs_finished, "high", integer=True),
    *FINISHED_ONLY[:4],
    _time("mean queueing delay", "queueing_delay_mean"),
    *FINISHED_ONLY[4:],
    Column("utilization (%)", _percent, "high"),
)
JAIN = Column("Jain's index (tenants)", lambda s: s.jain_tenants, "high")
FAIRNESS_AND_COST = (
    Column("preemptions", lambda s: s.preemptions, "low", integer=True),
    Column("max FTF ρ", lambda s: s.ftf_rho_max, "low"),
    Column("mean FTF ρ", lambda s: s.ftf_rho_mean, "low"),
    Column("jobs with ρ > 1 (%)", lambda s: _percent_of(s.ftf_rho_above_1), "low"),
    JAIN,
    Column("GPU-hours", lambda s: s.gpu_hours, "low"),
    Column("resizes", lambda s: s.resizes, "low", integer=True),
    Column("deadlines met (%)", lambda s: _percent_of(s.deadline_satisfaction), "high"),
    Column("wall seconds", lambda s: s.wall_seconds, "low"),
)
ETTR = Column("ETTR (%)", lambda s: _percent_of(s.ettr), "high")
# Node failures and checkpoints (--failures, docs/llm.md): shown when a run measured them.
FAILURES = (
    Column("node failures", lambda s: s.node_failures, "low", integer=True),
    Column("jobs interrupted", lambda s: s.job_interruptions, "low", integer=True),
    ETTR,
    Column("lost GPU-hours", lambda s: s.lost_gpu_hours, "low"),
    Column("checkpoint GPU-hours", lambda s: s.checkpoint_gpu_hours, "low"),
    Column("restart GPU-hours", lambda s: s.restart_gpu_hours, "low"),
)
COLUMNS = COMPLETION + FAIRNESS_AND_COST + FAILURES
# The summary is tables of at most 10 columns each, so that it fits a 1,280 px screen and
# a printed page (18 columns in one table did not: issue 11 item 12).
TABLES = (("Completion", COMPLETION), ("Fairness and cost", FAIRNESS_AND_COST),
          ("Failures and checkpoints", FAILURES))

HOW_TO_READ = (
    "How to read: times are simulated time, each in the unit its size reads best in (s, min, "
    "h, d: as the console's lines). JCT (job completion time) is finish minus "
    "submit over finished jobs; queueing delay is submit to first start (waits after a "
    "preemption are not in it); total wait is every wait of a finished job, after preemptions "
    "too (JCT minus the time it held GPUs); utilization is "
    "GPU-seconds in use over total GPUs times the span from first submit to last finish. Lower "
    "is better except for jobs finished, utilization and Jain's index; the best value of each "
    "column is highlighted when runs are compared. Wall seconds measure the simulator, not "
    "the schedule. FTF ρ is Themis' finish-time fairness, JCT over (the job's isolated time "
    "× the mean number of active jobs during its life); ρ > 1 means worse than a dedicated "
    "1/N share. Jain's index is over tenants' GPU-seconds (1 = equal shares). GPU-hours are "
    "held by jobs (restarts included); resizes count elastic re-allocations; deadlines met is "
    "the share of jobs with a deadline that finished by it (rejected ones miss it). With node "
    "failures: ETTR (effective training time ratio) is kept work over time since first start, "
    "GPU-weighted; lost GPU-hours produced work lost to a failure, checkpoint GPU-hours "
    "stalled writing checkpoints, restart GPU-hours reloaded them. '–' means not measured."
)

# The report's own rules, after dlsched's shared look (``theme.css``, the dashboard's too).
STYLE = """
main.report { max-width: 72em; }
main.report > h2 { margin-top: 1.4em; }
main.report h3 { font-size: 13.5px; margin: 0.8em 0 0.3em; }  /* below h2's 15px, not above */
.table { max-width: 100%; overflow-x: auto; margin: 0.5em 0 1em; }
.report table { width: auto; font-size: 13px; background: var(--card);
  border: 1px solid var(--line); }
.report th, .report td { text-align: right; }
.report th { vertical-align: bottom; min-width: 4em; }
.report td { white-space: nowrap; font-variant-numeric: tabular-nums; }
.report th:first-child, .report td:first-child { text-align: left; }
td.best { background: #dcf5e6; color: #146c3b; font-weight: bold; }
.meta, .how { color: var(--muted); }
figure { margin: 0.5em 0 1em; background: var(--card); border: 1px solid var(--line);
  border-radius: 8px; padding: 12px; }
figure svg { max-width: 100%; height: auto; }
@media print {
  body { margin: 0; max-width: none; font-size: 10pt; background: #fff; }
  header.top { display: none; }
  main.report { padding: 0; max-width: none; }
  .table { overflow: visible; }
  table { font-size: 8.5pt; page-break-inside: avoid; }
  .table table { width: 100%; table-layout: fixed; }  /* every column on the page */
  th, td { padding: 0.2em 0.35em; min-width: 0; overflow-wrap: anywhere; white-space: normal; }
  td.best { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  figure { page-break-inside: avoid; border: 0; padding: 0; }
}
"""


def best_texts(summaries: Sequence[Summary],
               columns: Sequence[Column] = COLUMNS) -> list[str | None]:
    """Per column, the displayed text of the best value (``None`` if no run has one). Texts are
    compared as shown, so runs that tie on screen are highlighted together. Columns over
    finished jobs only (``FINISHED_ONLY``) have none when the runs finished different numbers
    of jobs: each is then over a different set of jobs."""
    best: list[str | None] = []
    uneven = not finished_alike(summaries)
    for column in columns:
        values = [v for v in (column.value(s) for s in summaries) if v is not None]
        if not values or (uneven and column in FINISHED_ONLY):
            best.append(None)
            continue
        top = max(values) if column.better == "high" else min(values)
        best.append(column.format(top))
    return best


def finished_alike(summaries: Sequence[Summary]) -> bool:
    """Whether every run finished the same number of jobs."""
    return len({s.jobs_finished for s in summaries}) <= 1


def uneven_note(summaries: Sequence[Summary]) -> str:
    """A note under the summary when runs finished different numbers of jobs ('' if not)."""
    if finished_alike(summaries):
        return ""
    counts = ", ".join(str(s.jobs_finished) for s in summaries)
    return (f"<p>The runs finished different numbers of jobs ({counts}): JCT, "
            "total wait and makespan are each over that run's finished jobs only, so no best "
            "value is highlighted in those columns.</p>")


def _row(summary: Summary, label: str, columns: Sequence[Column],
         best: Sequence[str | None]) -> str:
    cells = [f"<td>{escape(label)}</td>"]
    for column, best_text in zip(columns, best, strict=True):
        text = column.text(summary)
        mark = ' class="best"' if text == best_text else ""
        cells.append(f"<td{mark}>{escape(text)}</td>")
    return "<tr>" + "".join(cells) + "</tr>"


@dataclass(frozen=True)
class RunTables:
    """Each run's jobs as columns and its summary, made once for a whole report: a run's
    ``JobRecords`` make a record per job on each pass, and the report's parts (summary, per
    tenant table, JCT curve) read every job (~10 s for four runs of the Philly table, where
    one pass of columns per run takes a fraction of a second)."""

    tables: list[JobTable]
    summaries: list[Summary]

    @classmethod
    def of(cls, results: Sequence[SimulationResult],
           inputs: Sequence[FairnessInputs | None] | None,
           summaries: Sequence[Summary] | None = None) -> RunTables:
        """``summaries``: the runs' own, when they were made with these ``inputs`` (each
        run's ``write_run`` returns it), else computed here."""
        tables = [job_table(r.jobs) for r in results]
        if summaries is not None:
            return cls(tables, list(summaries))
        given = list(inputs) if inputs is not None else [None] * len(results)
        return cls(tables, [summarize(r, i, t)
                            for r, i, t in zip(results, given, tables, strict=True)])


def shown_columns(results: Sequence[SimulationResult], summaries: Sequence[Summary],
                  columns: Sequence[Column], tables: Sequence[JobTable] | None = None
                  ) -> list[Column]:
    """The columns some run measured; Jain's index only where a run has two tenants or more
    (over one tenant it is 1 by definition). ``tables``: each run's jobs as columns, when the
    caller has made them."""
    tables = tables if tables is not None else [job_table(r.jobs) for r in results]
    tenants = max(len(set(t.queue)) for t in tables)
    return [c for c in columns if (c is not JAIN or tenants > 1)
            and any(c.value(s) is not None for s in summaries)]


def summary_table(results: Sequence[SimulationResult],
                  inputs: Sequence[FairnessInputs | None] | None = None,
                  runs: RunTables | None = None) -> str:
    """The summary as HTML tables (``TABLES``): one row per run; best values highlighted if
    there are two or more runs. ``inputs[i]`` (optional) gives run i's fairness inputs;
    ``runs``: the runs' columns and summaries, when the caller has made them."""
    runs = runs if runs is not None else RunTables.of(results, inputs)
    summaries = runs.summaries
    tables = []
    for title, group in TABLES:
        if group is FAILURES and not any(s.ettr is not None for s in summaries):
            continue  # no failure model and no checkpoint: every column would be 0
        columns = shown_columns(results, summaries, group, runs.tables)
        best = best_texts(summaries, columns) if len(summaries) > 1 else [None] * len(columns)
        head = "".join(f"<th>{escape(c.header)}</th>" for c in columns)
        rows = [_row(s, run_label(r), columns, best)
                for s, r in zip(summaries, results, strict=True)]
        tables.append(f"<h3>{escape(title)}</h3>\n<div class=\"table\"><table>\n<thead><tr>"
                      f"<th>policy</th>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows)
                      + "\n</tbody>\n</table></div>")
    note = uneven_note(summaries) if len(summaries) > 1 else ""
    return "\n".join(tables + ([note] if note else []))


def _distinct(values: Iterable[object]) -> str:
    return ", ".join(dict.fromkeys(str(v) for v in values))


def header_line(results: Sequence[SimulationResult]) -> str:
    """Trace, cluster, seed and dlsched version of the runs (each distinct value once)."""
    infos = [r.info for r in results]
    parts = [("trace", _distinct(i.trace for i in infos)),
             ("cluster", _distinct(i.cluster for i in infos)),
             ("seed", _distinct(i.seed for i in infos)),
             ("dlsched", _distinct(i.version for i in infos))]
    return " · ".join(f"{name} <b>{escape(value)}</b>" for name, value in parts)


def _figure(heading: str, svg: str) -> str:
    return f"<h2>{escape(heading)}</h2>\n<figure>\n{svg}\n</figure>"


def _boxed(html: str) -> str:
    """A table that scrolls inside its own box when wider than the page (the per-tenant table
    has two columns per run), instead of widening the whole page."""
    return html.replace("<table>", '<div class="table"><table>').replace(
        "</table>", "</table></div>")


def settings_line(settings: Mapping[str, str] | None) -> str:
    """The run's settings beyond trace and cluster (throughput model, every option not at its
    default), or nothing."""
    if not settings:
        return ""
    return ('<p class="meta">' + " · ".join(f"{escape(name)} <b>{escape(value)}</b>"
                                            for name, value in settings.items()) + "</p>")


def render_report(results: Sequence[SimulationResult], title: str,
                  inputs: Sequence[FairnessInputs | None] | None = None,
                  settings: Mapping[str, str] | None = None,
                  summaries: Sequence[Summary] | None = None) -> str:
    """The whole page as a string; ``inputs`` as in ``summary_table``; ``settings`` (name ->
    value) are shown under the header; ``summaries`` as for ``RunTables.of``."""
    if not results:
        raise ValueError("a report needs at least one simulation result")
    runs = RunTables.of(results, inputs, summaries)  # each run's jobs read once, for all below
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="meta">{header_line(results)}</p>',
        settings_line(settings),
        "<h2>Summary</h2>",
        summary_table(results, inputs, runs),
        _boxed(type_utilization_table(results, inputs, runs)),
        _boxed(tenant_table(results, runs.tables)),
        f'<p class="how">{escape(HOW_TO_READ)}</p>',
        _figure("Job completion time (CDF)", jct_cdf_svg(results, runs.tables)),
        _figure("GPU utilization over time", utilization_svg(results)),
        _figure("Queue length over time", queue_length_svg(results)),
    ]
    body = [part for part in body if part]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<style>{theme_css()}{STYLE}</style>\n</head>\n"
            '<body>\n<header class="top"><span class="brand">dlsched</span>'
            '<span class="muted">report</span></header>\n<main class="report">\n'
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def type_utilization_table(results: Sequence[SimulationResult],
                           inputs: Sequence[FairnessInputs | None] | None,
                           runs: RunTables | None = None) -> str:
    """Per-GPU-type utilization (%) per run, or nothing when no run measured it; ``runs`` as
    for ``summary_table``."""
    if inputs is None:
        return ""
    runs = runs if runs is not None else RunTables.of(results, inputs)
    rows = [(run_label(r), dict(s.utilization_by_type))
            for r, s in zip(results, runs.summaries, strict=True)]
    names = sorted({name for _, by_type in rows for name in by_type})
    if not names:
        return ""
    head = "".join(f"<th>{escape(n)} (%)</th>" for n in names)
    body = "\n".join(
        f"<tr><td>{escape(label)}</td>" + "".join(
            f"<td>{display(100 * by_type[n])}</td>" if n in by_type else "<td>–</td>"
            for n in names) + "</tr>" for label, by_type in rows)
    return ("<h2>Utilization by GPU type</h2>\n<table>\n<thead><tr><th>policy</th>" + head
            + "</tr></thead>\n<tbody>\n" + body + "\n</tbody>\n</table>")


def write_report(results: list[SimulationResult], path: Path, title: str,
                 inputs: Sequence[FairnessInputs | None] | None = None,
                 settings: Mapping[str, str] | None = None,
                 summaries: Sequence[Summary] | None = None) -> None:
    """Write one self-contained HTML file comparing ``results`` (one row and line per run);
    ``summaries`` as for ``RunTables.of``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(results, title, inputs, settings, summaries),
                    encoding="utf-8")
