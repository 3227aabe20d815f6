"""A small CNN on generated image-like data: 10 classes, each a fixed random 3x16x16 template
plus noise. Runs on CPU in seconds; data-parallel (DDP over gloo) when WORLD_SIZE > 1; resumes
from its last checkpoint; on SIGTERM it saves and exits 0.

    python examples/train_cnn.py --steps 50 --digest-out /tmp/cnn.digest
"""

from __future__ import annotations

import sys

from dlsched.extras import message

try:  # one line naming the extra, not a traceback, when torch is not installed
    import torch
    from torch import nn
except ModuleNotFoundError as exc:
    raise SystemExit(message("torch", "examples/train_cnn.py", exc.name or "torch")) from None

from training_loop import Dataset, parse_args, run  # noqa: E402

from dlsched.job import derive_seed  # noqa: E402

CLASSES = 10
SAMPLES = 2048
SHAPE = (3, 16, 16)


def build_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4),
        nn.Flatten(), nn.Dropout(0.1), nn.Linear(32 * 4 * 4, CLASSES),
    )


def make_dataset(seed: int) -> Dataset:
    """The same images on every rank and every attempt: they depend on the seed only."""
    generator = torch.Generator().manual_seed(derive_seed(seed, "cnn-data"))
    templates = torch.randn(CLASSES, *SHAPE, generator=generator)
    labels = torch.randint(0, CLASSES, (SAMPLES,), generator=generator)
    images = templates[labels] + torch.randn(SAMPLES, *SHAPE, generator=generator)
    return images, labels


def main(argv: list[str] | None = None) -> int:
    args = parse_args(__doc__.split("\n\n")[0], argv)
    return run(args, build_model, make_dataset, nn.functional.cross_entropy)


if __name__ == "__main__":
    sys.exit(main())
