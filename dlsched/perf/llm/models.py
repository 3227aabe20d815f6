"""Transformer language models by shape: built-in published models and YAML model files.

A model is what the FLOP count and the memory model need: layers, hidden size, attention heads
(and key/value heads for grouped-query attention), the MLP's width and kind, vocabulary and
sequence length, plus the training batch (sequences per iteration) its published runs used.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from dlsched.cluster.loader import parse_yaml, unknown_key_message
from dlsched.errors import ConfigError, InputError, InputLocation
from dlsched.wording import did_you_mean
from dlsched.yamlinput import number_read_as_text


@dataclass(frozen=True, slots=True)
class LlmModel:
    """A decoder-only transformer. ``ffn_hidden`` defaults to 4 x hidden (GPT); ``gated_mlp``
    (SwiGLU, Llama) has three MLP matrices instead of two; ``kv_heads`` < ``heads`` is grouped-
    query attention. ``global_batch`` is sequences per iteration."""

    name: str
    layers: int
    hidden: int
    heads: int
    vocab: int
    seq_len: int
    global_batch: int
    ffn_hidden: int = 0
    kv_heads: int = 0
    gated_mlp: bool = False
    tied_embeddings: bool = True

    def __post_init__(self) -> None:
        if self.ffn_hidden == 0:
            object.__setattr__(self, "ffn_hidden", 4 * self.hidden)
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        problem = self.problem()
        if problem is not None:
            raise ValueError(f"model {self.name}: {problem[0]}: {problem[1]}")

    def problem(self) -> tuple[str, str] | None:
        """The first impossible field and why, or None."""
        for name in ("layers", "hidden", "heads", "vocab", "seq_len", "global_batch",
                     "ffn_hidden", "kv_heads"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                return name, (f"must be an integer >= 1, got {value!r}"
                              f"{number_read_as_text(value, integer=True)}")
        if self.hidden % self.heads:
            return "heads", f"must divide hidden ({self.hidden}), got {self.heads}"
        if self.heads % self.kv_heads:
            return "kv_heads", f"must divide heads ({self.heads}), got {self.kv_heads}"
        return None

    @property
    def kv_hidden(self) -> int:
        return self.hidden // self.heads * self.kv_heads

    @property
    def layer_params(self) -> int:
        """Weights of one layer: Q and O (h x h), K and V (h x kv), the MLP, two norms."""
        h = self.hidden
        mlp = (3 if self.gated_mlp else 2) * h * self.ffn_hidden
        return 2 * h * h + 2 * h * self.kv_hidden + mlp + 4 * h

    @property
    def embedding_params(self) -> int:
        copies = 1 if self.tied_embeddings else 2
        return copies * self.vocab * self.hidden

    @property
    def params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params

    @property
    def tokens_per_iteration(self) -> int:
        return self.global_batch * self.seq_len


# Published shapes. GPT-3 175B and the 1T model as Megatron-LM ran them (Narayanan et al.,
# SC'21, Table 1: vocabulary 51,200, sequence 2,048); Llama 2 70B (Touvron et al. 2023: 80
# layers, 8,192 hidden, 64 heads, 8 KV heads, SwiGLU 28,672, 4M tokens a batch); Llama 3 405B
# (Llama Team, "The Llama 3 Herd of Models", 2024, Table 3: 126 layers, 16,384 hidden, 128
# heads, 8 KV heads, SwiGLU 53,248, vocabulary 128,256; Table 4: 8,192 tokens, 16M a batch).
BUILTIN_MODELS: dict[str, LlmModel] = {m.name: m for m in (
    LlmModel("gpt3-175b", layers=96, hidden=12288, heads=96, vocab=51200, seq_len=2048,
             global_batch=1536),
    LlmModel("megatron-1t", layers=128, hidden=25600, heads=160, vocab=51200, seq_len=2048,
             global_batch=3072),
    LlmModel("megatron-530b", layers=105, hidden=20480, heads=128, vocab=51200, seq_len=2048,
             global_batch=2520),
    LlmModel("megatron-146b", layers=80, hidden=12288, heads=96, vocab=51200, seq_len=2048,
             global_batch=2304),
    LlmModel("megatron-1.7b", layers=24, hidden=2304, heads=24, vocab=51200, seq_len=2048,
             global_batch=512),
    LlmModel("llama2-70b", layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672,
             vocab=32000, seq_len=4096, global_batch=1024, gated_mlp=True,
             tied_embeddings=False),
    LlmModel("llama3-405b", layers=126, hidden=16384, heads=128, kv_heads=8, ffn_hidden=53248,
             vocab=128256, seq_len=8192, global_batch=2048, gated_mlp=True,
             tied_embeddings=False),
)}

_REQUIRED = ("layers", "hidden", "heads", "vocab", "seq_len", "global_batch")
_FIELDS = {f.name: f for f in fields(LlmModel)}


def resolve_model(name_or_path: str | Path) -> LlmModel:
    """A built-in model by name, or a model from a YAML file."""
    model = BUILTIN_MODELS.get(str(name_or_path))
    if model is not None:
        return model
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") or path.exists():
        return load_model_yaml(path)
    known = ", ".join(sorted(BUILTIN_MODELS))
    raise ConfigError(f"unknown model '{name_or_path}': not a built-in ({known}) and not a "
                      "YAML file" + did_you_mean(str(name_or_path), BUILTIN_MODELS))


def load_model_yaml(path: str | Path) -> LlmModel:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InputError(InputLocation(str(path)), f"cannot read: {exc.strerror}") from None
    return parse_model_yaml(text, str(path))


def parse_model_yaml(text: str, source: str = "<string>") -> LlmModel:
    """A model from YAML keys named like ``LlmModel``'s fields; every mistake names the file,
    line and key."""
    doc, src = parse_yaml(text, source)
    if not isinstance(doc, dict):
        raise InputError(InputLocation(source, 1), "a model file is a mapping of keys")
    for key in doc:
        if key not in _FIELDS:
            raise src.error(str(key), unknown_key_message(key, _FIELDS))
    for key in _REQUIRED:
        if key not in doc:
            raise InputError(InputLocation(source, 1, key), "missing (required)")
    values: dict[str, Any] = {"name": Path(source).stem, **doc}
    for key in ("gated_mlp", "tied_embeddings"):
        if key in doc and not isinstance(doc[key], bool):
            raise src.error(key, f"must be true or false, got {doc[key]!r}")
    if not isinstance(values["name"], str):
        raise src.error("name", f"must be a string, got {values['name']!r}")
    probe = object.__new__(LlmModel)
    for f in fields(LlmModel):
        object.__setattr__(probe, f.name, values.get(f.name, f.default))
    # an omitted ffn_hidden / kv_heads defaults from hidden / heads; 1 while those are not
    # numbers yet (``hidden:`` left empty), whose own check comes first in ``problem``
    for key, base, factor in (("ffn_hidden", "hidden", 4), ("kv_heads", "heads", 1)):
        if values.get(key, 0) == 0:
            given = getattr(probe, base)
            object.__setattr__(probe, key, given * factor if type(given) is int else 1)
    problem = probe.problem()
    if problem is not None:
        raise src.error(problem[0], problem[1])
    return LlmModel(**values)
