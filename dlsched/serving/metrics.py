"""What a service run reports: SLO attainment, goodput, latency percentiles, GPU-hours.

A request meets its SLO when it finished and every bound given holds: time to first token
(TTFT), time per output token after the first (TPOT: ``(finish - first token) / (output - 1)``,
the mean inter-token latency DistServe and Splitwise bound), and end-to-end latency. Requests
never served (rejected, or unfinished) miss it. Goodput is SLO-meeting requests per second of
the trace (DistServe, Zhong et al., OSDI'24, §2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlsched.serving.llm_replica import RequestLog


@dataclass(frozen=True)
class Slo:
    ttft: float | None = None  # seconds
    tpot: float | None = None  # seconds per output token
    latency: float | None = None  # seconds, end to end

    def describe(self) -> str:
        parts = [f"{k} <= {v * 1e3:g} ms" for k, v in
                 (("TTFT", self.ttft), ("TPOT", self.tpot), ("latency", self.latency))
                 if v is not None]
        return ", ".join(parts) or "none"


def per_request(log: RequestLog) -> dict[str, np.ndarray]:
    ttft = log.first_token - log.arrival
    latency = log.finish - log.arrival
    steps = np.maximum(log.output - 1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(steps > 0, (log.finish - log.first_token) / np.maximum(steps, 1),
                        np.nan)
    return {"ttft": ttft, "tpot": tpot, "latency": latency}


def meets(log: RequestLog, slo: Slo) -> np.ndarray:
    values = per_request(log)
    ok = ~np.isnan(log.finish)
    for name in ("ttft", "tpot", "latency"):
        bound = getattr(slo, name)
        if bound is not None:
            v = values[name]
            undefined = np.isnan(v) if name == "tpot" else np.zeros(len(v), dtype=bool)
            ok &= undefined | (v <= bound)  # one-token outputs have no TPOT to miss
    return ok


def _pct(values: np.ndarray, q: float) -> float | None:
    v = values[~np.isnan(values)]
    return None if len(v) == 0 else float(np.percentile(v, q))


def service_metrics(log: RequestLog, slo: Slo, span: float) -> dict[str, float | int | None]:
    values = per_request(log)
    met = meets(log, slo)
    n = len(log.arrival)
    out: dict[str, float | int | None] = {
        "requests": n,
        "completed": int((~np.isnan(log.finish)).sum()),
        "slo_attainment": float(met.mean()) if n else None,
        "goodput_rps": float(met.sum() / span) if span > 0 else None,
        "preemptions": int(log.preemptions.sum()),
    }
    for name in ("ttft", "tpot", "latency"):
        for q in (50, 90, 99):
            out[f"{name}_p{q}"] = _pct(values[name], q)
    if log.started is not None:  # waiting before its first iteration began
        queueing = log.started - log.arrival
        out["queueing_p50"], out["queueing_p99"] = _pct(queueing, 50), _pct(queueing, 99)
    return out
