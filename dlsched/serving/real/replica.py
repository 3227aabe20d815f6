"""One replica process: the tiny causal LM on one CPU thread, behind the continuous-batching
engine, fed through a queue by the HTTP front end.

Messages in: ``(rid, prompt tokens, max_tokens)`` or ``None`` (stop). Messages out:
``("ready", index, time)`` once the model is loaded and warm, then
``("events", index, [Event...], [Iteration...])`` after each iteration that produced events
(a first token, a finish), with the iteration records only every ``REPORT_EVERY`` iterations
or when it goes idle (pickling them is the loop's largest cost besides the model).
Both ends are pipes (``multiprocessing.Pipe``): a send pickles and writes in the caller's
thread, so no queue feeder thread competes with the model for the GIL between iterations.
The model runs with ``torch.set_num_threads(1)`` and, when a CPU is given, pinned to it
(``os.sched_setaffinity``): the CPU is the "GPU" the scheduler core gave the replica.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from dlsched.serving.llm_replica import LlmEngineConfig
from dlsched.serving.real.engine import ContinuousBatcher, LiveRequest

MODEL_NAME = "tiny-lm"
REPORT_EVERY = 256


def _engine_default() -> LlmEngineConfig:
    return LlmEngineConfig(max_batch=32, max_prefill_tokens=2048, prefix_cache=False)


@dataclass(frozen=True)
class ReplicaSettings:
    """What every replica of a service runs: the model's shape and seed, its cache slots (the
    most requests running at once), KV blocks and the engine's batching limits."""

    d_model: int = 256
    heads: int = 4
    layers: int = 4
    max_context: int = 512
    seed: int = 0
    slots: int = 32
    kv_blocks: int = 1024  # of 16 tokens: 16,384 tokens
    engine: LlmEngineConfig = field(default_factory=_engine_default)
    model_name: str = MODEL_NAME

    def model_config(self) -> Any:
        from dlsched.job.tiny_lm import TinyLmConfig

        return TinyLmConfig(d_model=self.d_model, heads=self.heads, layers=self.layers,
                            max_context=self.max_context, seed=self.seed)


def build_engine(settings: ReplicaSettings) -> ContinuousBatcher:
    from dlsched.job.tiny_lm import KvSlots, TinyCausalLM

    config = settings.model_config()
    model = TinyCausalLM(config)
    cache = KvSlots(config, settings.slots)
    return ContinuousBatcher(model, cache, settings.slots, settings.kv_blocks, settings.engine)


def replica_main(index: int, settings: ReplicaSettings, cpu: int | None,
                 inbox: Any, outbox: Any) -> None:
    """The replica process's loop: take what has arrived (waiting only when idle), run one
    iteration, report what it did."""
    import torch

    if cpu is not None and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {cpu % (os.cpu_count() or 1)})
    torch.set_num_threads(1)
    batcher = build_engine(settings)
    batcher.add(LiveRequest(-1, [1] * 16, 2, time.time()))  # warm-up, not reported
    while batcher.busy:
        batcher.step()
    batcher.iterations.clear()
    outbox.send(("ready", index, time.time()))
    while True:
        for message in _drain(inbox, block=not batcher.busy):
            if message is None:
                return
            rid, prompt, max_tokens = message
            batcher.add(LiveRequest(rid, prompt, max_tokens, time.time()))
        events = batcher.step()
        # the records go when idle or every REPORT_EVERY iterations: pickling them after each
        # event (first token, finish) held every running request back ~0.4 ms
        report = len(batcher.iterations) >= REPORT_EVERY or bool(
            batcher.iterations and not batcher.busy)
        if events or report:
            outbox.send(("events", index, events, batcher.iterations if report else []))
            if report:
                batcher.iterations = []


def _drain(inbox: Any, block: bool) -> list[Any]:
    """Every message waiting on the pipe (at least one when ``block``)."""
    out = []
    if block:
        out.append(inbox.recv())
    while inbox.poll():
        out.append(inbox.recv())
    return out
