"""A replica's prefix cache: KV blocks of earlier prompts reused by later ones that start the
same way (vLLM's automatic prefix caching; Mooncake, Qin et al., FAST'25, §4: requests carry
the hashes of their 512-token prefix blocks, and a hit on the leading blocks skips their
prefill). Least recently used blocks are evicted past ``capacity`` blocks."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence

PREFIX_BLOCK_TOKENS = 512  # Mooncake's hash_ids granularity


class PrefixCache:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.blocks: OrderedDict[int, None] = OrderedDict()
        self.hit_tokens = 0
        self._watched: frozenset[int] = frozenset()
        self._tell: Callable[[int, bool], None] = _unwatched

    def watch(self, blocks: frozenset[int], tell: Callable[[int, bool], None]) -> None:
        """Call ``tell(block, True)`` when one of ``blocks`` comes in, ``tell(block, False)``
        when it is evicted (routing's index of the replicas caching a block)."""
        self._watched, self._tell = blocks, tell

    def lookup(self, hashes: Sequence[int], prompt: int) -> int:
        """Prompt tokens already cached (the leading blocks present, at most ``prompt - 1``:
        the last token is always computed); then caches all of ``hashes``."""
        hits = 0
        for h in hashes:
            if h not in self.blocks:
                break
            hits += 1
        watched = self._watched
        for h in hashes:
            if h in watched and h not in self.blocks:
                self._tell(h, True)
            self.blocks[h] = None
            self.blocks.move_to_end(h)
        while len(self.blocks) > self.capacity:
            evicted = self.blocks.popitem(last=False)[0]
            if evicted in watched:
                self._tell(evicted, False)
        cached = min(hits * PREFIX_BLOCK_TOKENS, prompt - 1)
        self.hit_tokens += cached
        return cached


def _unwatched(block: int, present: bool) -> None:
    """No one watches the cache's blocks."""
