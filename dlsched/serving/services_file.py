"""The services YAML file of ``dlsched simulate --services FILE`` (docs/inference.md)::

    services:
      - name: chat
        model: llama2-70b          # a measured model (llm) or any name (dnn)
        gpu: A100-80G
        tensor_parallel: 8
        replicas: 4
        slo: {ttft_ms: 2500, tpot_ms: 150}
        trace: AzureLLMInferenceTrace_conv.csv   # relative to this file; or a ServeGen
        # client file or folder, with lengths: TRACE (token counts drawn from it) and seed: N
        rate_scale: 1.0            # k: k times the trace's rate
        duration_s: 3600           # serve the first hour
        engine: {max_batch: 256, max_prefill_tokens: 8192, chunk_tokens: 512}
        autoscaling: {min: 1, max: 16, target_outstanding: 16, interval_s: 10,
                      cold_start_s: 60, stabilization_s: 300}   # instead of replicas
        disaggregation: {prefill_replicas: 5, prefill_gpu: H100}  # replicas: decode pool

A DNN service has ``kind: dnn``, ``slo: {latency_ms: ...}`` and ``batching: {latency_ms: {1: 5,
8: 11}, max_batch: 8, timeout_ms: 5}``. Every error names ``file:line:key``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dlsched.cluster.loader import unknown_key_message
from dlsched.errors import ConfigError, InputError
from dlsched.perf.inference.memory import kv_cache
from dlsched.perf.inference.profile import canonical_gpu, step_profile
from dlsched.serving.autoscale import AutoscalePolicy
from dlsched.serving.llm_replica import LlmEngineConfig
from dlsched.serving.metrics import Slo
from dlsched.serving.servegen import looks_like_servegen
from dlsched.serving.service import DnnBatching, PrefillPool, ServiceKind, ServiceSpec
from dlsched.yamlinput import YamlSource, load_yaml_file

_KEYS = ("name", "kind", "model", "gpu", "tensor_parallel", "replicas", "slo", "trace",
         "rate_scale", "duration_s", "queue", "priority", "engine", "batching", "autoscaling",
         "disaggregation", "lengths", "seed")
_DISAGG_KEYS = ("prefill_replicas", "prefill_gpu", "prefill_tensor_parallel")
_AUTOSCALE_KEYS = ("min", "max", "target_outstanding", "interval_s", "cold_start_s",
                   "stabilization_s")
_SLO_KEYS = ("ttft_ms", "tpot_ms", "latency_ms")
_ENGINE_KEYS = ("max_batch", "max_prefill_tokens", "chunk_tokens", "prefix_cache")
_BATCHING_KEYS = ("latency_ms", "max_batch", "timeout_ms")


@dataclass(frozen=True)
class ServicesFile:
    services: tuple[ServiceSpec, ...]
    source: YamlSource

    def error(self, index: int, key: str, message: str) -> InputError:
        return self.source.error(f"services[{index}].{key}" if key else f"services[{index}]",
                                 message)


class _Reader:
    def __init__(self, data: dict[str, Any], src: YamlSource, at: str) -> None:
        self.data, self.src, self.at = data, src, at

    def fail(self, key: str, message: str) -> InputError:
        return self.src.error(f"{self.at}.{key}" if key else self.at, message)

    def check_keys(self, known: tuple[str, ...]) -> None:
        for key in self.data:
            if key not in known:
                raise self.fail(str(key), unknown_key_message(key, {k: k for k in known}))

    def text(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if value is None:
            raise self.fail(key, "missing value")
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise self.fail(key, f"expected text, got {value!r}")
        return str(value)

    def number(self, key: str, default: float | None = None, *, low: float = 0.0,
               integer: bool = False) -> float | None:
        value = self.data.get(key, default)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"expected a number, got {value!r}{_exponent_hint(value)}")
        if integer and value != int(value):
            raise self.fail(key, f"expected an integer, got {value!r}")
        if not low <= value <= 1e12:
            raise self.fail(key, f"must be >= {low:g}, got {value!r}")
        return int(value) if integer else float(value)

    def sub(self, key: str, known: tuple[str, ...]) -> _Reader:
        value = self.data.get(key) or {}
        if not isinstance(value, dict):
            raise self.fail(key, "expected a mapping")
        reader = _Reader(value, self.src, f"{self.at}.{key}")
        reader.check_keys(known)
        return reader


def _exponent_hint(value: object) -> str:
    """PyYAML (YAML 1.1) reads ``1e9`` or ``1.0e9`` as text: a float needs a dot and a signed
    exponent (``1.0e+9``). Say how to write it."""
    if not isinstance(value, str):
        return ""
    try:
        number = float(value)
    except ValueError:
        return ""
    mantissa, _, exponent = value.lower().partition("e")
    if not exponent or number != number:
        return ""
    dotted = mantissa if "." in mantissa else f"{mantissa}.0"
    signed = exponent if exponent[0] in "+-" else f"+{exponent}"
    return f" (YAML reads it as text: write {dotted}e{signed})"


def load_services(path: str | Path) -> ServicesFile:
    data, src = load_yaml_file(path)
    if not isinstance(data, dict) or not isinstance(data.get("services"), list) \
            or not data["services"]:
        raise src.error("services", "a services file is a mapping with a non-empty list "
                        "'services'")
    for key in data:
        if key != "services":
            raise src.error(str(key), unknown_key_message(key, {"services": "services"}))
    base = Path(path).parent
    specs, names = [], set()
    for i, item in enumerate(data["services"]):
        if not isinstance(item, dict):
            raise src.error(f"services[{i}]", "a service is a mapping")
        spec = _service(_Reader(item, src, f"services[{i}]"), base)
        if spec.name in names:
            raise src.error(f"services[{i}].name", f"service {spec.name!r} is defined twice")
        names.add(spec.name)
        specs.append(spec)
    return ServicesFile(tuple(specs), src)


def _service(r: _Reader, base: Path) -> ServiceSpec:
    r.check_keys(_KEYS)
    kind_text = r.text("kind", "llm").lower()
    try:
        kind = ServiceKind(kind_text)
    except ValueError:
        raise r.fail("kind", f"unknown kind {kind_text!r} (known: llm, dnn)") from None
    _refuse_ignored(r, kind)
    slo = _slo(r.sub("slo", _SLO_KEYS), kind)
    trace = Path(r.text("trace"))
    spec = ServiceSpec(
        name=r.text("name"), model=r.text("model"), gpu=canonical_gpu(r.text("gpu")),
        tp=int(r.number("tensor_parallel", 1, low=1, integer=True) or 1),
        replicas=int(r.number("replicas", 1, low=1, integer=True) or 1), slo=slo,
        trace=str(trace if trace.is_absolute() else base / trace), kind=kind,
        rate_scale=r.number("rate_scale", 1.0, low=1e-6) or 1.0,
        duration=r.number("duration_s", None, low=1.0), queue=r.text("queue", "default"),
        priority=int(r.number("priority", 100, low=-10**6, integer=True) or 0),
        engine=_engine(r.sub("engine", _ENGINE_KEYS)),
        dnn=_batching(r.sub("batching", _BATCHING_KEYS)) if kind is ServiceKind.DNN else None,
        autoscale=_autoscale(r.sub("autoscaling", _AUTOSCALE_KEYS))
        if "autoscaling" in r.data else None)
    if spec.autoscale is not None:
        spec = replace(spec, replicas=spec.autoscale.min_replicas)
    if "lengths" in r.data:
        lengths = Path(r.text("lengths"))
        spec = replace(spec, lengths=str(lengths if lengths.is_absolute() else base / lengths))
    spec = replace(spec, seed=int(r.number("seed", 0, low=0, integer=True) or 0))
    for key, named in (("trace", spec.trace), ("lengths", spec.lengths)):
        if named is not None and not Path(named).exists():  # at its line, not later bare
            raise r.fail(key, f"no such request trace file: {named}")
    rates = Path(spec.trace).exists() and looks_like_servegen(Path(spec.trace))
    if spec.lengths is None and rates:
        raise r.fail("trace", "a ServeGen rate trace carries no token counts: add 'lengths: "
                     "TRACE' (an Azure or Mooncake trace to draw them from)")
    if spec.lengths is not None and Path(spec.trace).exists() and not rates:
        raise r.fail("lengths", f"{r.text('trace')} is a request trace with its own token "
                     "counts: lengths is for a ServeGen rate trace (remove it)")
    if "disaggregation" in r.data:
        spec = replace(spec, prefill=_prefill_pool(r.sub("disaggregation", _DISAGG_KEYS), spec))
        if spec.autoscale is not None or kind is ServiceKind.DNN:
            raise r.fail("disaggregation", "only a static llm service can be disaggregated")
    if kind is ServiceKind.LLM:
        try:
            step_profile(spec.model, spec.gpu, spec.tp)
        except ConfigError as exc:
            key = "model" if not _known_model(spec.model) else "gpu"
            raise r.fail(key, str(exc)) from None
        try:
            kv_cache(spec.model, spec.gpu, spec.tp)
        except ConfigError as exc:
            raise r.fail("tensor_parallel", str(exc)) from None
    elif "latency_ms" not in r.data.get("batching", {}):
        raise r.fail("batching", "a dnn service needs its measured batch latencies: "
                     "batching: {latency_ms: {1: 5.0, 8: 11.0}}")
    return spec


def _refuse_ignored(r: _Reader, kind: ServiceKind) -> None:
    """A key the service would not use is an error, not a silent default: ``replicas`` beside
    ``autoscaling`` (the autoscaler starts from ``min``), ``batching`` on an llm service and
    ``engine`` on a dnn one (each kind reads only its own)."""
    if "replicas" in r.data and "autoscaling" in r.data:
        raise r.fail("replicas", "give replicas or autoscaling, not both (an autoscaled "
                     "service starts with autoscaling.min replicas)")
    other = "batching" if kind is ServiceKind.LLM else "engine"
    if other in r.data:
        owner = "dnn" if kind is ServiceKind.LLM else "llm"
        raise r.fail(other, f"{other} is read only for a kind: {owner} service; this one is "
                     f"kind: {kind.value}")


def _known_model(model: str) -> bool:
    from dlsched.perf.inference.profile import step_profiles

    return any(m == model.lower() for m, _, _ in step_profiles())


def _slo(r: _Reader, kind: ServiceKind) -> Slo:
    ms = {k: r.number(k, None, low=1e-3) for k in _SLO_KEYS}
    if all(v is None for v in ms.values()):
        raise r.fail("", "an SLO needs ttft_ms and tpot_ms (llm) or latency_ms")
    if kind is ServiceKind.DNN and ms["latency_ms"] is None:
        raise r.fail("latency_ms", "a dnn service's SLO is its end-to-end latency_ms")
    return Slo(*(None if v is None else v / 1e3 for v in ms.values()))


def _engine(r: _Reader) -> LlmEngineConfig:
    chunk = r.number("chunk_tokens", None, low=1, integer=True)
    return LlmEngineConfig(max_batch=int(r.number("max_batch", 256, low=1, integer=True) or 1),
                           max_prefill_tokens=int(r.number("max_prefill_tokens", 8192, low=1,
                                                           integer=True) or 1),
                           chunk_tokens=None if chunk is None else int(chunk),
                           prefix_cache=_flag(r, "prefix_cache", True))


def _flag(r: _Reader, key: str, default: bool) -> bool:
    value = r.data.get(key, default)
    if not isinstance(value, bool):
        raise r.fail(key, f"expected true or false, got {value!r}")
    return value


def _prefill_pool(r: _Reader, spec: ServiceSpec) -> PrefillPool:
    pool = PrefillPool(int(r.number("prefill_replicas", 1, low=1, integer=True) or 1),
                       canonical_gpu(r.text("prefill_gpu", spec.gpu)),
                       int(r.number("prefill_tensor_parallel", spec.tp, low=1, integer=True)
                           or 1))
    try:
        step_profile(spec.model, pool.gpu, pool.tp)
        kv_cache(spec.model, pool.gpu, pool.tp)
    except ConfigError as exc:
        raise r.fail("prefill_gpu", str(exc)) from None
    return pool


def _autoscale(r: _Reader) -> AutoscalePolicy:
    low = int(r.number("min", 1, low=1, integer=True) or 1)
    high = int(r.number("max", 16, low=1, integer=True) or 1)
    if high < low:
        raise r.fail("max", f"must be >= min ({low}), got {high}")
    return AutoscalePolicy(low, high, r.number("target_outstanding", 16.0, low=1e-3) or 16.0,
                           r.number("interval_s", 10.0, low=1e-3) or 10.0,
                           r.number("cold_start_s", 60.0) or 0.0,
                           r.number("stabilization_s", 300.0) or 0.0)


def _batching(r: _Reader) -> DnnBatching:
    table = r.data.get("latency_ms")
    if not isinstance(table, dict) or not table:
        raise r.fail("latency_ms", "expected a mapping batch size: milliseconds")
    rows = []
    for batch, ms in table.items():
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise r.fail(f"latency_ms.{batch}", "a batch size is an integer >= 1")
        if isinstance(ms, bool) or not isinstance(ms, int | float) or ms <= 0:
            raise r.fail(f"latency_ms.{batch}", f"expected milliseconds > 0, got {ms!r}")
        rows.append((batch, ms / 1e3))
    return DnnBatching(tuple(sorted(rows)),
                       int(r.number("max_batch", max(b for b, _ in rows), low=1,
                                    integer=True) or 1),
                       (r.number("timeout_ms", 5.0, low=0.0) or 0.0) / 1e3)

