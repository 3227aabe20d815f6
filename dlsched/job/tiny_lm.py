"""A small causal language model for real serving on CPU: byte-level GPT-style decoder with a
paged-by-slot KV cache. Weights come from a fixed seed (no download); what it generates is
meaningless, how long its steps take is what a serving experiment measures.

Shape: ``layers`` pre-norm transformer blocks (multi-head causal self-attention, a GELU MLP of
4x width), learned position embeddings, the output head tied to the token embedding (GPT-2's
layout, Radford et al. 2019). Decoding is greedy.

Two kinds of forward pass, the two phases of LLM inference:
- ``prefill``: the prompts of several requests packed into one sequence for the dense layers,
  causal attention within each prompt (as variable-length attention kernels do), writing
  each prompt's keys and values into its cache slot;
- ``decode``: one new token for each request of a batch (the dense layers batched), each
  attending to its own slot's cache up to its own length.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812


@dataclass(frozen=True)
class TinyLmConfig:
    vocab: int = 256  # bytes
    d_model: int = 128
    heads: int = 4
    layers: int = 2
    max_context: int = 512  # tokens a request may hold (prompt + output)
    seed: int = 0

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    def params(self) -> int:
        d = self.d_model
        return self.vocab * d + self.max_context * d + self.layers * (12 * d * d + 13 * d) + 2 * d


class _Block(nn.Module):
    def __init__(self, cfg: TinyLmConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.heads, self.head_dim = cfg.heads, cfg.head_dim
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def split(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(..., d) -> q, k, v of shape (..., heads, head_dim)."""
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        shape = (*x.shape[:-1], self.heads, self.head_dim)
        return q.reshape(shape), k.reshape(shape), v.reshape(shape)

    def finish(self, x: torch.Tensor, attended: torch.Tensor) -> torch.Tensor:
        x = x + self.proj(attended.reshape(x.shape))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class KvSlots:
    """Keys and values of ``slots`` requests, each up to ``max_context`` tokens:
    ``k[layer][slot, head, position, :]``."""

    def __init__(self, cfg: TinyLmConfig, slots: int) -> None:
        shape = (slots, cfg.heads, cfg.max_context, cfg.head_dim)
        self.k = [torch.zeros(shape) for _ in range(cfg.layers)]
        self.v = [torch.zeros(shape) for _ in range(cfg.layers)]
        self.slots = slots


class TinyCausalLM(nn.Module):
    def __init__(self, cfg: TinyLmConfig | None = None) -> None:
        super().__init__()
        self.cfg = cfg = cfg or TinyLmConfig()
        generator = torch.Generator().manual_seed(cfg.seed)
        self.embed = nn.Embedding(cfg.vocab, cfg.d_model)
        self.position = nn.Embedding(cfg.max_context, cfg.d_model)
        self.blocks = nn.ModuleList(_Block(cfg) for _ in range(cfg.layers))
        self.ln_f = nn.LayerNorm(cfg.d_model)
        with torch.no_grad():  # GPT-2's initialisation, from the seed alone
            for name, p in self.named_parameters():
                if p.dim() > 1:
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.02)
                elif name.endswith("bias"):
                    p.zero_()
        self.eval()

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln_f(x) @ self.embed.weight.T

    def prefill(self, prompts: list[list[int]], slots: list[int], cache: KvSlots) -> list[int]:
        """Run the packed prompts, fill their slots' caches; each request's first token."""
        return [int(t) for t in self.prefill_logits(prompts, slots, cache).argmax(dim=-1)]

    def decode(self, tokens: list[int], slots: list[int], positions: list[int],
               cache: KvSlots) -> list[int]:
        """One step: request ``i`` feeds ``tokens[i]`` at ``positions[i]`` of its slot; the
        next token of each."""
        logits = self.decode_logits(tokens, slots, positions, cache)
        return [int(t) for t in logits.argmax(dim=-1)]

    @torch.inference_mode()
    def prefill_logits(self, prompts: list[list[int]], slots: list[int],
                       cache: KvSlots) -> torch.Tensor:
        lengths = [len(p) for p in prompts]
        tokens = torch.tensor([t for p in prompts for t in p], dtype=torch.long)
        positions = torch.cat([torch.arange(n) for n in lengths])
        x = self.embed(tokens) + self.position(positions)
        for layer, block in enumerate(self.blocks):
            q, k, v = block.split(x)  # (T, heads, head_dim), the prompts packed
            parts, start = [], 0
            for n, slot in zip(lengths, slots, strict=True):
                keys = k[start:start + n].transpose(0, 1)  # (heads, n, head_dim)
                values = v[start:start + n].transpose(0, 1)
                cache.k[layer][slot, :, :n] = keys
                cache.v[layer][slot, :, :n] = values
                parts.append(F.scaled_dot_product_attention(
                    q[start:start + n].transpose(0, 1), keys, values, is_causal=True))
                start += n
            x = block.finish(x, torch.cat(parts, dim=1).transpose(0, 1))
        ends = torch.tensor(lengths).cumsum(0) - 1
        return self.logits(x[ends])

    @torch.inference_mode()
    def decode_logits(self, tokens: list[int], slots: list[int], positions: list[int],
                      cache: KvSlots) -> torch.Tensor:
        pos = torch.tensor(positions)
        index = torch.tensor(slots)
        x = self.embed(torch.tensor(tokens)) + self.position(pos)
        for layer, block in enumerate(self.blocks):
            q, k, v = block.split(x)  # (B, heads, head_dim)
            keys, values = cache.k[layer], cache.v[layer]
            keys[index, :, pos] = k
            values[index, :, pos] = v
            # each request attends to its own context only (no padding to the longest: the
            # cost grows with the batch's KV tokens, as with paged attention)
            attended = torch.cat([
                F.scaled_dot_product_attention(q[i, :, None], keys[s, :, :p + 1],
                                               values[s, :, :p + 1])
                for i, (s, p) in enumerate(zip(slots, positions, strict=True))])
            x = block.finish(x, attended)
        return self.logits(x)

