"""A tiny causal transformer on generated token data: each sequence follows
``x[t+1] = (a * x[t] + c) mod 32`` with its own ``a`` and ``c``, so predicting the next token
means reading them from the context. Runs on CPU in seconds; data-parallel (DDP over gloo) when
WORLD_SIZE > 1; resumes from its last checkpoint; on SIGTERM it saves and exits 0.

    python examples/train_transformer.py --steps 50 --digest-out /tmp/transformer.digest
"""

from __future__ import annotations

import sys

from dlsched.extras import message

try:  # one line naming the extra, not a traceback, when torch is not installed
    import torch
    from torch import nn
except ModuleNotFoundError as exc:
    raise SystemExit(message("torch", "examples/train_transformer.py",
                             exc.name or "torch")) from None

from training_loop import Dataset, parse_args, run  # noqa: E402

from dlsched.job import derive_seed  # noqa: E402

VOCAB = 32
LENGTH = 16
SAMPLES = 2048


class TinyTransformer(nn.Module):
    def __init__(self, width: int = 32, heads: int = 2, layers: int = 2) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, width)
        self.position = nn.Parameter(torch.randn(LENGTH, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width,
                                           dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(width, VOCAB)
        mask = nn.Transformer.generate_square_subsequent_mask(LENGTH)
        self.register_buffer("causal_mask", mask, persistent=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden = self.embed(tokens) + self.position[: tokens.shape[1]]
        hidden = self.encoder(hidden, mask=self.causal_mask, is_causal=True)
        return self.head(hidden)


def make_dataset(seed: int) -> Dataset:
    """Inputs are tokens 0..15 of each sequence, targets tokens 1..16 (the next token)."""
    generator = torch.Generator().manual_seed(derive_seed(seed, "transformer-data"))
    multiplier = torch.tensor([1, 3, 5, 7])[torch.randint(0, 4, (SAMPLES,), generator=generator)]
    offset = torch.randint(0, VOCAB, (SAMPLES,), generator=generator)
    tokens = [torch.randint(0, VOCAB, (SAMPLES,), generator=generator)]
    for _ in range(LENGTH):
        tokens.append((multiplier * tokens[-1] + offset) % VOCAB)
    sequences = torch.stack(tokens, dim=1)
    return sequences[:, :-1], sequences[:, 1:]


def next_token_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    return run(args, TinyTransformer, make_dataset, next_token_loss)


if __name__ == "__main__":
    sys.exit(main())
