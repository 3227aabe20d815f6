"""One LLM replica with iteration-level continuous batching and a paged KV cache.

Rules, each from its paper:
- Iteration-level scheduling (Orca, Yu et al., OSDI'22, §3.1): the batch is re-formed at every
  iteration boundary; a finished request leaves and a waiting one joins without waiting for the
  batch to drain.
- Paged KV cache (vLLM, Kwon et al., SOSP'23, §4.2-4.5): a request holds ``ceil(tokens / 16)``
  blocks; it is admitted (first come, first served) only when its prompt's blocks fit above a
  1% watermark; a decode step that needs a block when none is free preempts the most recently
  admitted request, whose blocks are freed and which is recomputed later (prefill of its prompt
  plus the tokens it had generated; vLLM's default for single sequences).
- vLLM's default scheduler runs waiting prompts first (a prefill-only iteration of up to
  ``max_prefill_tokens`` tokens) and decodes otherwise.
- Chunked prefill (Sarathi-Serve, Agrawal et al., OSDI'24, §4.2), when ``chunk_tokens`` is set:
  every iteration carries all running decodes plus prompt chunks filling a token budget, so
  decodes never stall behind a long prompt. Its time is the decode step's plus the prefill
  time of the chunk's tokens.

Decode iterations between two events (an arrival the replica could admit, a request finishing,
the cache filling) form a run with the same batch, so they are advanced together: the time of
the ``j``-th is ``decode(B) + slope x (kv + j B - B ref)``, whose partial sums numpy computes at
once; no Python runs per token.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from dlsched.perf.inference.fit import WAKE_AFTER
from dlsched.perf.inference.profile import StepProfile
from dlsched.serving.prefix_cache import PREFIX_BLOCK_TOKENS, PrefixCache

INF = math.inf


@dataclass(frozen=True)
class LlmEngineConfig:
    max_batch: int = 256  # vLLM's max_num_seqs
    max_prefill_tokens: int = 8192  # prompt tokens in one prefill iteration
    chunk_tokens: int | None = None  # Sarathi-Serve's token budget per iteration
    block_tokens: int = 16
    watermark: float = 0.01
    prefix_cache: bool = True  # reuse cached prompt prefixes when the trace gives hashes


@dataclass
class RequestLog:
    """Per-request outcomes (seconds; NaN until known), shared by a service's replicas."""

    arrival: np.ndarray
    prompt: np.ndarray
    output: np.ndarray
    first_token: np.ndarray
    finish: np.ndarray
    preemptions: np.ndarray
    prefix: tuple[tuple[int, ...], ...] | None = None  # prefix block hashes (Mooncake)
    started: np.ndarray | None = None  # when its first (prefill or batch) iteration began

    def __post_init__(self) -> None:
        if self.started is None:
            self.started = np.full(len(self.arrival), np.nan)

    def mark_started(self, request: int, now: float) -> None:
        assert self.started is not None
        if np.isnan(self.started[request]):
            self.started[request] = now

    @classmethod
    def empty(cls, arrival: np.ndarray, prompt: np.ndarray, output: np.ndarray,
              prefix: tuple[tuple[int, ...], ...] | None = None) -> RequestLog:
        n = len(arrival)
        return cls(arrival, prompt, output, np.full(n, np.nan), np.full(n, np.nan),
                   np.zeros(n, dtype=np.int64), prefix)


_DECODE_TABLE: list[tuple[StepProfile, int, tuple[float, ...]]] = []  # the last one built


def _decode_table(profile: StepProfile, max_batch: int) -> tuple[float, ...]:
    """The profile's decode step time per batch size 0..``max_batch``: built once for a run's
    replicas (kept for the last profile asked; at 100,000 replicas building it for each took
    most of the run)."""
    if _DECODE_TABLE and _DECODE_TABLE[0][0] is profile and _DECODE_TABLE[0][1] == max_batch:
        return _DECODE_TABLE[0][2]
    table = tuple(profile.decode(b) for b in range(max_batch + 1))
    _DECODE_TABLE[:] = [(profile, max_batch, table)]
    return table


class LlmReplica:
    """A replica available from ``start``: ``enqueue`` requests, ``advance(t)`` runs every
    iteration that starts before ``t``."""

    def __init__(self, profile: StepProfile, blocks: int, log: RequestLog,
                 config: LlmEngineConfig, start: float = 0.0, salt: int | None = None) -> None:
        self.profile, self.blocks, self.log, self.config = profile, blocks, log, config
        self.time = start  # when the replica next decides (end of its last iteration)
        self.waiting: deque[int] = deque()
        self.ids: list[int] = []  # running requests, in admission order
        self.ctx = np.zeros(0, dtype=np.int64)  # KV tokens each running request holds
        self.left = np.zeros(0, dtype=np.int64)  # tokens each still has to generate
        self.redo: dict[int, int] = {}  # preempted request -> tokens it had generated
        self.busy_seconds = 0.0
        self.iterations = 0
        self.peak_batch = 0
        self.peak_blocks = 0
        self.series: list[tuple[float, int, int]] = []  # (time, batch, KV blocks) at changes
        self.rejected: list[int] = []
        self.lost: list[int] = []  # requests it held when it went away (``stop``)
        # requests the last iteration (or decode run) gave a first token / finished, at its
        # end: undone when the replica stops before that end (``stop``)
        self._first_last: list[int] = []
        self._finished_last: list[int] = []
        self.pending: tuple[float, np.ndarray] | None = None  # a planned decode run
        self.partial = 0  # prompt tokens of the queue's head already prefilled (chunked)
        self._watermark = max(1, int(config.watermark * blocks))
        self.cache = (PrefixCache(blocks * config.block_tokens // PREFIX_BLOCK_TOKENS)
                      if config.prefix_cache and log.prefix is not None else None)
        self._decode_base = _decode_table(profile, config.max_batch)
        self.cold = False  # the next prefill wakes the replica (a fitted profile's ``wake``)
        # a measured spread of step times: this replica's own draws (``salt``, e.g. its index
        # among replicas that start together; else its start tells it apart)
        self._spread = (None if profile.spread is None else profile.spread.sampler(
            int(round(start * 1e6)) if salt is None else salt))

    @property
    def outstanding(self) -> int:
        return len(self.waiting) + len(self.ids)

    @property
    def wakes_at(self) -> float:
        """``advance(until)`` changes nothing for ``until < wakes_at`` (routing's index,
        ``serving/replica_index.py``): a planned decode run's end, the next iteration's start
        while it holds requests, never when idle."""
        if self.pending is not None:
            start, cum = self.pending
            return start + float(cum[-1])
        return self.time if self.waiting or self.ids else INF

    def used_blocks(self, extra: int = 0) -> int:
        bt = self.config.block_tokens
        return int(((self.ctx + extra + bt - 1) // bt).sum())

    def enqueue(self, request: int, now: float) -> None:
        """Queue a request; a decode run in flight stops at the first boundary at or after
        ``now`` so the next iteration can admit it."""
        if self.pending is not None:
            start, cum = self.pending
            self.pending = None
            self._commit(cum, 1 + int(np.searchsorted(cum[:-1], now - start, side="left")))
        if not self.ids and not self.waiting:
            fit = self.profile.fit
            if fit is not None and fit.wake and now - self.time >= WAKE_AFTER:
                self.cold = True  # asleep long enough for its caches to go cold
            self.time = max(self.time, now)
        self.waiting.append(request)

    def advance(self, until: float) -> None:
        """Run every iteration that starts before ``until``; a decode run that ends after
        ``until`` stays pending (nothing changes the batch before it ends unless a request is
        queued here), so routing elsewhere never splits it."""
        while True:
            if self.pending is not None:
                start, cum = self.pending
                if start + cum[-1] > until:
                    return
                self.pending = None
                self._commit(cum, len(cum))
                continue
            if self.time >= until:
                return
            if self.waiting and self.config.chunk_tokens is not None:
                if not self._chunked_iteration():
                    return
            elif self.waiting and self._prefill():
                continue
            elif self.ids:
                self._decode_run()
            else:
                return

    def stop(self, at: float) -> None:
        """The replica goes away at ``at`` (the scheduler preempted it, or its node failed):
        iterations that end by then count; the requests it still held, queued or running, are
        lost (``lost``; unfinished, so they miss the SLO) and it serves nothing more."""
        self.advance(at)
        if self.pending is not None:  # the decode steps of the run in flight done by ``at``
            start, cum = self.pending
            self.pending = None
            done = int(np.searchsorted(cum, at - start, side="right"))
            if done:
                self._commit(cum, done)
        if self.time > at and self.iterations:  # (not one that was still to start)
            self._abort_last(at)
        self.lost += [*self.ids, *self.waiting]
        self.ids, self.waiting, self.redo, self.partial = [], deque(), {}, 0
        self.ctx, self.left = self.ctx[:0], self.left[:0]
        self.time = max(self.time, at)
        self._note()

    def _abort_last(self, at: float) -> None:
        """The last iteration (a prefill, a hybrid one, or decode steps committed when a
        request was queued) ends after the stop at ``at``: its tokens never come. Requests it
        finished are lost; those it gave a first token hold none (they are lost as running)."""
        log = self.log
        for r in self._first_last:
            log.first_token[r] = math.nan
        for r in self._finished_last:
            log.finish[r] = math.nan
        self.lost += self._finished_last
        self._first_last, self._finished_last = [], []
        self.busy_seconds -= self.time - at
        self.time = at
        while self.series and self.series[-1][0] > at:
            self.series.pop()

    # --- prefill-first (vLLM default) ---

    def _prompt_tokens(self, request: int) -> int:
        return int(self.log.prompt[request]) + self.redo.get(request, 0)

    def _admissible(self, request: int, batch: int, tokens: int, used: int) -> bool:
        need = -(-self._prompt_tokens(request) // self.config.block_tokens)
        if need + self._watermark > self.blocks:
            return False
        return (batch < self.config.max_batch and used + need + self._watermark <= self.blocks
                and (tokens == 0 or tokens + self._prompt_tokens(request)
                     <= self.config.max_prefill_tokens))

    def _reject_impossible(self) -> None:
        """A prompt larger than the whole cache can never run: refused, not queued forever."""
        while self.waiting:
            need = -(-self._prompt_tokens(self.waiting[0]) // self.config.block_tokens)
            if need + self._watermark <= self.blocks:
                return
            self.rejected.append(self.waiting.popleft())

    def _prefill(self) -> bool:
        self._reject_impossible()
        used, tokens, admitted = self.used_blocks(), 0, []
        while self.waiting and self._admissible(self.waiting[0], len(self.ids) + len(admitted),
                                                tokens, used):
            r = self.waiting.popleft()
            tokens += self._prompt_tokens(r)
            used += -(-self._prompt_tokens(r) // self.config.block_tokens)
            admitted.append(r)
        if not admitted:
            return False
        if self.cache is not None and self.log.prefix is not None:
            tokens -= sum(self.cache.lookup(self.log.prefix[r], self._prompt_tokens(r))
                          for r in admitted if r not in self.redo)
        for r in admitted:
            self.log.mark_started(r, self.time)
        wake, self.cold = (self.profile.fit.wake if self.cold and self.profile.fit else 0.0,
                           False)
        gap = self.profile.fit.gap if self.profile.fit is not None else 0.0
        model = self.profile.prefill_pack_seconds([self._prompt_tokens(r) for r in admitted],
                                                  tokens)
        if self._spread is not None:
            woke = self._spread.woke() if wake else None
            if woke is None:
                model *= self._spread.prefill()
            else:  # a prefill after idling, as served ones took with their wake-up
                model, wake = (model + wake) * woke, 0.0
        self._run(gap + wake + model)
        self._join(admitted, self.time)
        return True

    def _join(self, admitted: list[int], now: float) -> None:
        log = self.log
        ctx, left = [], []
        for r in admitted:
            done = self.redo.pop(r, 0)
            if np.isnan(log.first_token[r]):
                log.first_token[r] = now
                self._first_last.append(r)
            ctx.append(int(log.prompt[r]) + done + 1)
            left.append(int(log.output[r]) - done - 1)
        self.ids.extend(admitted)
        self.ctx = np.concatenate([self.ctx, np.asarray(ctx, dtype=np.int64)])
        self.left = np.concatenate([self.left, np.asarray(left, dtype=np.int64)])
        self.peak_batch = max(self.peak_batch, len(self.ids))
        self.peak_blocks = max(self.peak_blocks, self.used_blocks())
        self._retire()
        self._note()

    def _run(self, seconds: float, iterations: int = 1) -> None:
        self._first_last, self._finished_last = [], []
        self.time += seconds
        self.busy_seconds += seconds
        self.iterations += iterations

    def _retire(self) -> None:
        done = self.left <= 0
        if not done.any():
            return
        for i in np.flatnonzero(done):
            self.log.finish[self.ids[i]] = self.time
            self._finished_last.append(self.ids[i])
        keep = ~done
        self.ids = [r for r, k in zip(self.ids, keep, strict=True) if k]
        self.ctx, self.left = self.ctx[keep], self.left[keep]

    # --- decode runs ---

    def _room(self, most: int) -> int:
        """Decode steps (<= most) the cache holds for the running batch."""
        if self.used_blocks(most) <= self.blocks:
            return most
        low, high = 0, most  # used_blocks(low) fits, used_blocks(high) does not
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if self.used_blocks(mid) <= self.blocks else (low, mid)
        return low

    def _preempt_last(self) -> None:
        r = self.ids.pop()
        generated = int(self.ctx[-1]) - self._prompt_tokens(r)
        self.redo[r] = self.redo.get(r, 0) + generated
        self.ctx, self.left = self.ctx[:-1], self.left[:-1]
        self.log.preemptions[r] += 1
        self.waiting.appendleft(r)

    def _decode_times(self, steps: int) -> np.ndarray:
        p, batch = self.profile, len(self.ids)
        if p.fit is not None:
            model = p.fit.decode(batch, float(self.ctx.sum()) + batch * np.arange(steps))
            if self._spread is not None:
                model = model * self._spread.decode(steps, batch)
            return p.fit.gap + model
        base = self._decode_base[batch]
        kv = float(self.ctx.sum()) + batch * np.arange(steps) - batch * p.reference_context
        model = np.maximum(0.5 * base, base + p.context_slope * kv)
        return model if self._spread is None else model * self._spread.decode(steps, batch)

    def _decode_run(self) -> None:
        """Plan the decode iterations up to the next completion (or a full cache)."""
        steps = self._room(int(self.left.min()))
        if steps == 0:
            self._preempt_last()
            return
        self.pending = (self.time, np.cumsum(self._decode_times(steps)))

    def _commit(self, cum: np.ndarray, steps: int) -> None:
        self._run(float(cum[steps - 1]), steps)
        self.ctx += steps
        self.left -= steps
        self.peak_blocks = max(self.peak_blocks, self.used_blocks())
        self._retire()
        self._note()

    def _note(self) -> None:
        """Batch size and KV blocks in use from now on (the report's series)."""
        self.series.append((self.time, len(self.ids), self.used_blocks()))

    # --- chunked prefill (Sarathi-Serve) ---

    def _chunked_iteration(self) -> bool:
        """One hybrid iteration: every running decode plus prompt chunks up to the budget."""
        self._reject_impossible()
        budget = max(0, (self.config.chunk_tokens or 0) - len(self.ids))
        decode = self._decode_times(1)[0] if self.ids else 0.0
        if self.ids and self._room(1) == 0:
            self._preempt_last()
            return True
        chunk, finished = self._fill_chunks(budget)
        if not self.ids and chunk == 0:
            return False
        prefill = self.profile.prefill_seconds(chunk) if chunk else 0.0
        if chunk and self._spread is not None:
            prefill *= self._spread.prefill()
        self._run(decode + prefill)
        if len(self.ids):
            self.ctx += 1
            self.left -= 1
            self._retire()
        if finished:
            self._join(finished, self.time)
        else:
            self._note()
        return True

    def _fill_chunks(self, budget: int) -> tuple[int, list[int]]:
        """Prompt tokens taken from the head of the queue (``self.partial`` tracks a prompt
        split over iterations) and the requests whose prompt completes this iteration."""
        partial = self.partial
        used, chunk, finished = self.used_blocks(1), 0, []
        bt = self.config.block_tokens
        while self.waiting and budget > 0 and len(self.ids) + len(finished) < \
                self.config.max_batch:
            r = self.waiting[0]
            need = -(-self._prompt_tokens(r) // bt)
            if partial == 0 and used + need + self._watermark > self.blocks:
                break
            take = min(budget, self._prompt_tokens(r) - partial)
            self.log.mark_started(r, self.time)
            chunk, budget, partial = chunk + take, budget - take, partial + take
            if partial == self._prompt_tokens(r):
                finished.append(self.waiting.popleft())
                used, partial = used + need, 0
            else:
                break
        self.partial = partial
        return chunk, finished
