"""Prefill/decode disaggregation (Splitwise, Patel et al., ISCA'24, §4; DistServe, Zhong et al.,
OSDI'24, §3): prompts run on a pool of prefill replicas, whose first token ends the request's
TTFT; the KV cache then moves to a pool of decode replicas, which only decode, so long prompts
never stall their batches.

- Prefill pool: the same continuous-batching replica, every request cut to one output token
  (prefill iterations only, first come first served, up to ``max_prefill_tokens``).
- Transfer: the prompt's KV cache (``tokens x kv_bytes_per_token``) over ``link_gbps`` GB/s
  per GPU of the prefill replica (DGX A100/H100: one 200 Gb/s InfiniBand HCA per GPU, 25 GB/s).
  Splitwise overlaps it layer by layer with the prefill (§4.3); charging it whole after the
  prefill is the pessimistic bound.
- Decode pool: requests join the running batch at the next iteration boundary with no prefill
  iteration (their KV cache has arrived), under the same paged-KV admission; one preempted for
  lack of blocks is recomputed there (a prefill of its tokens on the decode replica).

The pools are independent (no back-pressure from decode to prefill), so they run one after
the other; routing within each is join-the-shortest-queue.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlsched.perf.inference.memory import SERVING_MODELS, kv_bytes_per_token, kv_cache
from dlsched.perf.inference.profile import step_profile
from dlsched.serving.llm_replica import LlmEngineConfig, LlmReplica, RequestLog
from dlsched.serving.metrics import Slo, service_metrics
from dlsched.serving.requests import RequestTrace
from dlsched.serving.routing import ReplicaFactory, Schedule, Slot, held_end

LINK_GBPS_PER_GPU = 25.0


class DecodeReplica(LlmReplica):
    """A decode-only replica: admitted requests join without a prefill iteration unless they
    are being recomputed after a preemption."""

    def _prefill(self) -> bool:
        self._reject_impossible()
        used, admitted, redo_tokens = self.used_blocks(), [], 0
        while self.waiting and self._admissible(self.waiting[0], len(self.ids) + len(admitted),
                                                0, used):
            r = self.waiting.popleft()
            used += -(-self._prompt_tokens(r) // self.config.block_tokens)
            if r in self.redo:
                redo_tokens += self._prompt_tokens(r)
            admitted.append(r)
        if not admitted:
            return False
        if redo_tokens:
            self._run(self.profile.prefill_seconds(redo_tokens))
        self._join(admitted, self.time)  # its log's first_token: admission here (unused)
        return True


@dataclass(frozen=True)
class Pool:
    gpu: str
    tp: int
    replicas: int
    schedule: Schedule | None = None  # when its replicas serve (None: all from 0, never stopped)

    def serving(self) -> Schedule:
        return self.schedule or Schedule((0.0,) * self.replicas)


def serve_disaggregated(model: str, trace: RequestTrace, prefill: Pool, decode: Pool,
                        slo: Slo, config: LlmEngineConfig | None = None,
                        link_gbps: float = LINK_GBPS_PER_GPU) -> dict[str, float | int | None]:
    """Metrics of ``trace`` served by a prefill pool and a decode pool (GPU-hours of both)."""
    config = config or LlmEngineConfig()
    p_profile, d_profile = (step_profile(model, prefill.gpu, prefill.tp),
                            step_profile(model, decode.gpu, decode.tp))
    p_blocks = kv_cache(model, prefill.gpu, prefill.tp).blocks
    d_blocks = kv_cache(model, decode.gpu, decode.tp).blocks
    per_token = kv_bytes_per_token(SERVING_MODELS[model.lower()])
    transfer = trace.prompt * per_token / (link_gbps * 1e9 * prefill.tp)
    log, p_slots, d_slots = serve_pools(
        trace, lambda lg, s: LlmReplica(p_profile, p_blocks, lg, config, s), prefill.serving(),
        lambda lg, s: DecodeReplica(d_profile, d_blocks, lg, config, s), decode.serving(),
        transfer)
    metrics = service_metrics(log, slo, trace.duration)  # no rate over 0 s: None
    done = log.finish[~np.isnan(log.finish)]
    end = max(trace.duration, float(done.max()) if len(done) else 0.0)
    pools = ((prefill, p_slots), (decode, d_slots))
    last = held_end(p_slots + d_slots, end)
    metrics["gpu_hours"] = sum(max(0.0, s.held_until(last) - s.requested) * pool.tp
                               for pool, slots in pools for s in slots) / 3600
    metrics["served_until_s"] = end
    every = p_slots + d_slots
    metrics["lost"] = sum(len(s.replica.lost) for s in every)
    metrics["replica_stops"] = sum(s.stopped_early for s in every)
    # the runs after a stop that began while requests still arrived (later ones serve nothing)
    metrics["replica_restarts"] = sum(len(slots) - len(pool.serving().starts)
                                      for pool, slots in pools)
    return metrics


def run_pools(trace: RequestTrace, prefill_make: ReplicaFactory, prefill_starts: list[float],
              decode_make: ReplicaFactory, decode_starts: list[float],
              transfer: np.ndarray) -> RequestLog:
    """The requests' log on pools whose replicas start at the given times, never stopped."""
    return serve_pools(trace, prefill_make, Schedule(tuple(prefill_starts)), decode_make,
                       Schedule(tuple(decode_starts)), transfer)[0]


def serve_pools(trace: RequestTrace, prefill_make: ReplicaFactory, prefill: Schedule,
                decode_make: ReplicaFactory, decode: Schedule, transfer: np.ndarray
                ) -> tuple[RequestLog, list[Slot], list[Slot]]:
    """The requests' log and each pool's replicas: first tokens from the prefill pool, the
    rest from the decode pool once each request's KV cache has arrived (``transfer`` seconds
    after its prefill). A request a stopped prefill replica held never reaches the decode
    pool; one a stopped decode replica held never finishes (both ``lost``)."""
    first = RequestTrace(trace.name, trace.arrival, trace.prompt, np.ones_like(trace.output),
                         trace.prefix)
    p_log, p_slots = prefill.serve(first, prefill_make)
    log = RequestLog.empty(trace.arrival, trace.prompt, trace.output)
    log.first_token[:] = p_log.first_token
    log.started = p_log.started
    many = trace.output > 1
    log.finish[~many] = p_log.finish[~many]
    ready = p_log.finish + transfer
    order = np.flatnonzero(many & ~np.isnan(ready))
    order = order[np.argsort(ready[order], kind="stable")]
    second = RequestTrace(trace.name, ready[order], trace.prompt[order], trace.output[order])
    d_log, d_slots = decode.serve(second, decode_make)
    log.finish[order] = d_log.finish
    log.preemptions[order] = d_log.preemptions
    return log, p_slots, d_slots
