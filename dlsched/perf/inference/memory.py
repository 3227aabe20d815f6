"""KV-cache capacity of an LLM replica, in paged blocks (vLLM's accounting: Kwon et al.,
"Efficient Memory Management for Large Language Model Serving with PagedAttention", SOSP'23).

A token's cache is its key and value vectors in every layer: ``2 x layers x kv_hidden x 2``
bytes in 16-bit precision. A replica of ``tp`` GPUs keeps ``gpu_memory_utilization`` (vLLM's
default 0.9) of their memory, less the 16-bit weights, for blocks of ``BLOCK_TOKENS`` tokens
(vLLM's default block size 16).
"""

from __future__ import annotations

from dataclasses import dataclass

from dlsched.errors import ConfigError
from dlsched.perf.llm.hardware import GPU_SPECS
from dlsched.perf.llm.models import BUILTIN_MODELS, LlmModel

BLOCK_TOKENS = 16
GPU_MEMORY_UTILIZATION = 0.9

# BLOOM-176B (BigScience 2022): 70 layers, hidden 14,336, 112 heads (no GQA), vocabulary 250,880.
SERVING_MODELS: dict[str, LlmModel] = {
    "llama2-70b": BUILTIN_MODELS["llama2-70b"],
    "bloom-176b": LlmModel("bloom-176b", layers=70, hidden=14336, heads=112, vocab=250880,
                           seq_len=2048, global_batch=2048),
}


@dataclass(frozen=True)
class KvCache:
    blocks: int
    block_tokens: int = BLOCK_TOKENS

    @property
    def tokens(self) -> int:
        return self.blocks * self.block_tokens


def kv_bytes_per_token(model: LlmModel) -> int:
    return 2 * model.layers * model.kv_hidden * 2


def kv_cache(model_name: str, gpu: str, tp: int,
             utilization: float = GPU_MEMORY_UTILIZATION) -> KvCache:
    """Blocks of KV cache on one replica; a ConfigError when the weights alone do not fit."""
    model = SERVING_MODELS.get(model_name.lower())
    if model is None:
        raise ConfigError(f"model {model_name}: no shape known (known: "
                          f"{', '.join(sorted(SERVING_MODELS))})")
    memory_gb = GPU_SPECS[gpu.removesuffix("-pcap")].memory_gb
    free = tp * memory_gb * 1e9 * utilization - 2 * model.params
    blocks = int(free // (kv_bytes_per_token(model) * BLOCK_TOKENS))
    if blocks < 1:
        raise ConfigError(f"model {model_name}: its {2 * model.params / 1e9:.0f} GB of weights "
                          f"leave no KV cache on {tp} x {gpu} ({memory_gb:g} GB each)")
    return KvCache(blocks)
