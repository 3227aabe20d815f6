"""The HTML report of a services run: a table of each service's metrics (SLO attainment,
goodput, p50/p90/p99 of TTFT, TPOT and end-to-end latency, queueing, GPU-hours) and the
service plots (``service_plots.py``), inline SVG, one self-contained page."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from dlsched.report.html import STYLE
from dlsched.report.plots import _to_svg
from dlsched.report.service_plots import (
    ServiceSeries,
    SharedCluster,
    cluster_gpus,
    service_svgs,
)
from dlsched.report.theme import theme_css

COLUMNS = (("requests", "requests", "{:.0f}"), ("SLO attainment (%)", "slo_attainment", "pct"),
           ("goodput (req/s)", "goodput_rps", "{:.2f}"),
           ("TTFT p50/p90/p99 (s)", "ttft", "p"), ("TPOT p50/p90/p99 (ms)", "tpot", "pms"),
           ("latency p50/p90/p99 (s)", "latency", "p"),
           ("queueing p50/p99 (s)", "queueing", "q"), ("GPU-hours", "gpu_hours", "{:.1f}"),
           ("peak batch", "peak_batch", "{:.0f}"), ("KV peak (%)", "kv_peak_fraction", "pct"))
# Two tables of at most six columns: one of ten did not fit a 1,400-px page (GPU-hours, peak
# batch and KV peak hid behind a scroll).
TABLES = (("Service level", COLUMNS[:5]), ("Latency and resources", COLUMNS[5:]))


def _cell(metrics: Mapping[str, Any], key: str, how: str) -> str:
    def num(k: str, scale: float = 1.0, digits: int = 2) -> str:
        v = metrics.get(k)
        return "–" if v is None else f"{v * scale:.{digits}f}"

    if how == "pct":
        return num(key, 100)
    if key == "tpot" and metrics.get("kind") == "dnn":  # no tokens: its 0 ms is no time
        return "–"
    if how in ("p", "pms"):
        scale, digits = (1e3, 0) if how == "pms" else (1.0, 2)
        return " / ".join(num(f"{key}_p{q}", scale, digits) for q in (50, 90, 99))
    if how == "q":
        return " / ".join(num(f"{key}_p{q}") for q in (50, 99))
    v = metrics.get(key)
    return "–" if v is None else how.format(v)


def metrics_table(services: Mapping[str, Mapping[str, Any]],
                  columns: Sequence[tuple[str, str, str]] = COLUMNS) -> str:
    head = "".join(f"<th>{escape(title)}</th>" for title, _, _ in columns)
    rows = "\n".join(
        f"<tr><td>{escape(name)}</td>" + "".join(
            f"<td>{escape(_cell(m, key, how))}</td>" for _, key, how in columns) + "</tr>"
        for name, m in services.items())
    return (f'<div class="table"><table>\n<thead><tr><th>service</th>{head}</tr></thead>\n'
            f"<tbody>\n{rows}\n</tbody>\n</table></div>")


def render_services_report(title: str, meta: str, services: Mapping[str, Mapping[str, Any]],
                           series: Sequence[ServiceSeries],
                           shared: SharedCluster | None = None) -> str:
    body = [f"<h1>{escape(title)}</h1>", f'<p class="meta">{escape(meta)}</p>',
            "<h2>Services</h2>"]
    for heading, columns in TABLES:
        body += [f"<h3>{escape(heading)}</h3>", metrics_table(services, columns)]
    figures = service_svgs(series)
    unplotted = [name for name in services if name not in {s.name for s in series}]
    if unplotted and figures:
        body.append(f'<p class="meta">Not in the plots below: {escape(", ".join(unplotted))} '
                    "(no per-request series: a disaggregated service has its metrics only)."
                    "</p>")
    if shared is not None:
        figures.append(("Services and training on the cluster (GPUs held, preemptions)",
                        _to_svg(*cluster_gpus(shared))))
    body += [f"<h2>{escape(h)}</h2>\n<figure>\n{svg}\n</figure>" for h, svg in figures]
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{escape(title)}</title>\n<style>{theme_css()}{STYLE}</style>\n</head>\n"
            '<body>\n<header class="top"><span class="brand">dlsched</span>'
            '<span class="muted">services report</span></header>\n<main class="report">\n'
            + "\n".join(body) + "\n</main>\n</body>\n</html>\n")


def write_services_report(path: Path, title: str, meta: str,
                          services: Mapping[str, Mapping[str, Any]],
                          series: Sequence[ServiceSeries],
                          shared: SharedCluster | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_services_report(title, meta, services, series, shared),
                    encoding="utf-8")
