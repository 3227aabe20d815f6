"""Inference serving on the Azure LLM 2023 traces (issue 16's headline experiments):

- ``conv-N``: the conversation trace (19,366 requests, 1 h) on N Llama2-70B TP-8 A100-80G
  replicas with continuous batching: SLO attainment, p99 TTFT and TPOT (no published
  reference: the measured values stand alone);
- ``code-splitwise``: prefill/decode disaggregation against colocated replicas on the code
  trace, against Splitwise's headline (Patel et al., ISCA'24, abstract: 1.4x throughput at 20%
  lower cost). ``throughput_ratio``: goodput of the best prefill/decode split of 8 machines
  over 8 colocated machines; ``cost_ratio``: the fewest disaggregated machines matching the
  SLO attainment of 8 colocated ones, over 8.

SLO: TTFT <= 2.5 s, TPOT <= 150 ms. The traces are read from ``--opt traces=DIR``, by default
from ``traces/inference/azure-llm-2023`` of the data directory (``$DLSCHED_DATA``,
``dlsched/data_location.py``): like every other data lookup, not relative to the working
directory.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from dlsched.data_location import find_data, where
from dlsched.errors import ConfigError
from dlsched.reproduce.registry import ExperimentOptions, register_experiment
from dlsched.reproduce.rows import Measured
from dlsched.serving.disaggregated import Pool, serve_disaggregated
from dlsched.serving.metrics import Slo
from dlsched.serving.run import serve, service_trace
from dlsched.serving.service import ServiceSpec

DATA_DIR = "traces/inference/azure-llm-2023"  # under the data directory
SLO = Slo(ttft=2.5, tpot=0.15)
CONV_CASES = ("conv-2", "conv-4", "conv-8")
MACHINES = 8


def _trace(options: ExperimentOptions, name: str) -> str:
    file = f"AzureLLMInferenceTrace_{name}.csv"
    given = options.options.get("traces")
    if given is None:
        found = find_data(f"{DATA_DIR}/{file}")
        if found is None:
            raise ConfigError(f"{DATA_DIR}/{file}: found in neither {where()} (the Azure LLM "
                              f"2023 traces: --opt traces=DIR)")
        return str(found)
    path = Path(given) / file
    if not path.is_file():
        raise ConfigError(f"{path}: no such file (the Azure LLM 2023 traces: --opt traces=DIR)")
    return str(path)


def _spec(path: str, replicas: int = 1) -> ServiceSpec:
    return ServiceSpec("chat", "llama2-70b", "A100-80G", 8, replicas, SLO, path)


@register_experiment(
    "serving-azure", "Llama2-70B serving on the Azure LLM 2023 traces: SLO attainment on 2/4/8 "
    "replicas (conversation) and prefill/decode disaggregation vs Splitwise (code)",
    cases=(*CONV_CASES, "code-splitwise"),
    options={"traces": f"folder of the Azure LLM 2023 CSV files (default {DATA_DIR} of "
                     f"the data directory, $DLSCHED_DATA)"})
def serving_azure(options: ExperimentOptions) -> Iterator[Measured]:
    conv = [c for c in CONV_CASES if c in options.cases]
    if conv:
        spec = _spec(_trace(options, "conv"))
        trace = service_trace(spec)
        for case in conv:
            options.log(f"{case}: serving {len(trace)} requests")
            m = serve(spec, trace, [0.0] * int(case.split("-")[1])).metrics
            for metric in ("slo_attainment", "ttft_p99", "tpot_p99"):
                yield Measured(case, "continuous-batching", metric, m[metric])
    if "code-splitwise" in options.cases:
        yield from _splitwise(options)


def _splitwise(options: ExperimentOptions) -> Iterator[Measured]:
    spec = _spec(_trace(options, "code"))
    trace = service_trace(spec)
    colocated = serve(spec, trace, [0.0] * MACHINES).metrics
    best: dict[int, tuple[float, float]] = {}  # machines -> (attainment, goodput) of best split
    for machines in range(2, MACHINES + 1):
        options.log(f"code-splitwise: {machines} machines, every prefill/decode split")
        for p in range(1, machines):
            m = serve_disaggregated("llama2-70b", trace, Pool("A100-80G", 8, p),
                                    Pool("A100-80G", 8, machines - p), SLO)
            best[machines] = max(best.get(machines, (0.0, 0.0)),
                                 (m["slo_attainment"] or 0.0, m["goodput_rps"] or 0.0))
    throughput = best[MACHINES][1] / max(colocated["goodput_rps"] or 1e-9, 1e-9)
    target = colocated["slo_attainment"] or 0.0
    fewest = min((n for n, (a, _) in best.items() if a >= target), default=None)
    yield Measured("code-splitwise", "disaggregated", "throughput_ratio", throughput)
    yield Measured("code-splitwise", "disaggregated", "cost_ratio",
                   None if fewest is None else fewest / MACHINES)
