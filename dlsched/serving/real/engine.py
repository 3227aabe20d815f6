"""A real continuous-batching engine over a model with a slotted KV cache: the batching rule of
the simulator's ``LlmReplica`` (``serving/llm_replica.py``), run on wall-clock time.

- Iteration-level scheduling (Orca, Yu et al., OSDI'22, §3.1): the batch is re-formed at every
  iteration; a finished request leaves at once.
- vLLM's default scheduler (Kwon et al., SOSP'23): waiting prompts first (a prefill-only
  iteration of up to ``max_prefill_tokens`` tokens, first come first served), decode otherwise.
- Paged KV accounting (vLLM §4.2-4.5): a request holds ``ceil(tokens / block_tokens)`` blocks;
  it is admitted only when its prompt's blocks fit above the watermark; a decode step that
  needs a block when none is free preempts the most recently admitted request, whose blocks
  are freed and which is recomputed later (its prompt plus the tokens it had generated).

Everything but the model's two calls is bookkeeping, so ``iterations`` (what each iteration
did and how long it took) is also what the profiler measures.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from dlsched.serving.llm_replica import LlmEngineConfig


class SlotModel(Protocol):
    def prefill(self, prompts: list[list[int]], slots: list[int], cache: object) -> list[int]: ...

    def decode(self, tokens: list[int], slots: list[int], positions: list[int],
               cache: object) -> list[int]: ...


@dataclass
class LiveRequest:
    rid: int
    prompt: list[int]
    max_tokens: int
    arrived: float
    generated: list[int] = field(default_factory=list)
    slot: int | None = None
    first_token: float | None = None
    preemptions: int = 0
    redo: int = 0  # generated tokens to recompute after a preemption

    @property
    def context(self) -> int:
        """Tokens in its KV cache once running (the last generated one is fed next step)."""
        return len(self.prompt) + len(self.generated)

    def prompt_tokens(self) -> list[int]:
        """What a prefill runs: the prompt, plus what it had generated if it was preempted."""
        return self.prompt + self.generated[:self.redo]


@dataclass(frozen=True)
class Event:
    rid: int
    kind: str  # "first" (first token), "done", "rejected"
    time: float
    tokens: tuple[int, ...] = ()
    preemptions: int = 0


@dataclass(frozen=True)
class Iteration:
    start: float
    seconds: float
    phase: str  # "prefill" or "decode"
    batch: int  # requests in it
    tokens: int  # prompt tokens (prefill) or requests' KV tokens (decode)
    blocks_used: int  # KV blocks held after it
    square_tokens: int = 0  # prefill: the sum of its prompts' squared lengths


class ContinuousBatcher:
    """``add`` requests; each ``step`` runs one iteration and returns what happened."""

    def __init__(self, model: SlotModel, cache: object, slots: int, kv_blocks: int,
                 config: LlmEngineConfig, clock: Callable[[], float] = time.time) -> None:
        if config.chunk_tokens is not None:
            raise ValueError("the real engine runs prefill-first batching, not chunked prefill")
        self.model, self.cache, self.config, self.clock = model, cache, config, clock
        self.blocks = kv_blocks
        self.free_slots = list(range(slots - 1, -1, -1))
        self.max_batch = min(slots, config.max_batch)
        self.waiting: deque[LiveRequest] = deque()
        self.running: list[LiveRequest] = []
        self.iterations: list[Iteration] = []
        self._watermark = max(1, int(config.watermark * kv_blocks))

    @property
    def busy(self) -> bool:
        return bool(self.waiting or self.running)

    def add(self, request: LiveRequest) -> None:
        self.waiting.append(request)

    def _need(self, tokens: int) -> int:
        return -(-tokens // self.config.block_tokens)

    def used_blocks(self, extra: int = 0) -> int:
        return sum(self._need(r.context + extra) for r in self.running)

    def step(self) -> list[Event]:
        """One iteration: a prefill of what can be admitted, else a decode of the batch; a
        decode that would overflow the cache first preempts the newest request, after which
        waiting prompts get their chance again (the simulator's loop, step by step)."""
        events: list[Event] = []
        while True:
            events += self._reject_impossible()
            admitted = self._admit() if self.waiting else []
            if admitted:
                return events + self._prefill(admitted)
            if not self.running:
                return events
            if self.used_blocks(1) <= self.blocks:
                return events + self._decode()
            self._preempt_last()

    def _reject_impossible(self) -> list[Event]:
        out = []
        while self.waiting and (self._need(len(self.waiting[0].prompt_tokens()))
                                + self._watermark > self.blocks):
            r = self.waiting.popleft()
            out.append(Event(r.rid, "rejected", self.clock()))
        return out

    def _admit(self) -> list[LiveRequest]:
        used, tokens, admitted = self.used_blocks(), 0, []
        while self.waiting and len(self.running) + len(admitted) < self.max_batch:
            r = self.waiting[0]
            size = len(r.prompt_tokens())
            if used + self._need(size) + self._watermark > self.blocks:
                break
            if tokens and tokens + size > self.config.max_prefill_tokens:
                break
            admitted.append(self.waiting.popleft())
            used, tokens = used + self._need(size), tokens + size
        return admitted

    def _prefill(self, admitted: list[LiveRequest]) -> list[Event]:
        for r in admitted:
            r.slot = self.free_slots.pop()
        prompts = [r.prompt_tokens() for r in admitted]
        start = self.clock()
        first = self.model.prefill(prompts, [r.slot for r in admitted], self.cache)
        now = self.clock()
        events = []
        for r, token in zip(admitted, first, strict=True):
            r.generated.append(token)  # after a recompute, the token after those redone
            r.redo = 0
            if r.first_token is None:
                r.first_token = now
                events.append(Event(r.rid, "first", now))
        self.running.extend(admitted)
        events += self._retire(now)
        self._record(start, now, "prefill", len(admitted), sum(map(len, prompts)),
                     sum(len(p) ** 2 for p in prompts))
        return events

    def _decode(self) -> list[Event]:
        batch = self.running
        start = self.clock()
        nxt = self.model.decode([r.generated[-1] for r in batch], [r.slot for r in batch],
                                [r.context - 1 for r in batch], self.cache)
        now = self.clock()
        for r, token in zip(batch, nxt, strict=True):
            r.generated.append(token)
        events = self._retire(now)
        self._record(start, now, "decode", len(batch), sum(r.context for r in batch))
        return events

    def _preempt_last(self) -> None:
        r = self.running.pop()
        assert r.slot is not None
        self.free_slots.append(r.slot)
        r.slot, r.redo = None, len(r.generated)
        r.preemptions += 1
        self.waiting.appendleft(r)

    def _retire(self, now: float) -> list[Event]:
        done = [r for r in self.running if len(r.generated) >= r.max_tokens]
        if not done:
            return []
        self.running = [r for r in self.running if len(r.generated) < r.max_tokens]
        for r in done:
            assert r.slot is not None
            self.free_slots.append(r.slot)
        return [Event(r.rid, "done", now, tuple(r.generated[:r.max_tokens]), r.preemptions)
                for r in done]

    def _record(self, start: float, end: float, phase: str, batch: int, tokens: int,
                square_tokens: int = 0) -> None:
        self.iterations.append(Iteration(start, end - start, phase, batch, tokens,
                                         self.used_blocks(), square_tokens))
