"""The loop both examples share: data-parallel training that survives preemption bit-exactly.

What makes a stop-and-resume give the same weights as an uninterrupted run:
- the batch of step ``s`` is a function of ``(seed, s)`` only, and rank ``r`` of ``W`` takes
  rows ``r::W`` of it (``--batch-size`` is the global batch), so no data-loader position needs
  saving, and the same global batch is trained at any world size;
- the checkpoint holds the model, the optimizer, the step and every rank's RNG state (dropout);
- a SIGTERM only sets a flag; between steps all ranks agree to stop, save at the current step
  and exit 0, so at most the step in flight is redone.
"""

from __future__ import annotations

import argparse
import collections
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from torch.optim import Adam

from dlsched.job import JobContext, Reporter, derive_seed
from dlsched.job.checkpoint import CheckpointTimer
from dlsched.job.torch import (
    checkpoint_agreed,
    init_distributed,
    load_checkpoint,
    save_checkpoint,
    seed_everything,
    shutdown_distributed,
    stop_agreed,
    weights_digest,
    wrap_model,
)

Dataset = tuple[torch.Tensor, torch.Tensor]
LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def parse_args(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--steps", type=int, default=50, help="total optimizer steps")
    parser.add_argument("--batch-size", type=int, default=32,
                        help="global batch, split evenly over the workers")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--checkpoint-every", type=int, default=10,
                        help="also save every K steps, 0 for never (a crash loses < K)")
    parser.add_argument("--checkpoint-dir", type=Path, default=None,
                        help="used when DLSCHED_CHECKPOINT_DIR is unset")
    parser.add_argument("--digest-out", type=Path, default=None,
                        help="rank 0 writes the final weights digest here")
    parser.add_argument("--step-delay", type=float, default=0.0,
                        help="sleep in each step, to mimic a bigger model")
    return parser.parse_args(argv)


def run(args: argparse.Namespace, build_model: Callable[[], nn.Module],
        make_dataset: Callable[[int], Dataset], loss_fn: LossFn) -> int:
    """Train to ``args.steps`` or until stopped; the process exit code (0 in both cases)."""
    ctx = JobContext.from_env(default_checkpoint_dir=args.checkpoint_dir)
    ctx.install_signal_handler()
    torch.set_num_threads(1)
    if args.batch_size % ctx.world_size:
        raise SystemExit(f"--batch-size {args.batch_size} is not divisible by "
                         f"WORLD_SIZE {ctx.world_size}")
    init_distributed(ctx)
    finished = False
    try:
        code = _train(ctx, args, build_model, make_dataset(args.seed), loss_fn)
        finished = True
        return code
    finally:
        shutdown_distributed(synchronize=finished)


def _train(ctx: JobContext, args: argparse.Namespace, build_model: Callable[[], nn.Module],
           dataset: Dataset, loss_fn: LossFn) -> int:
    model, optimizer, step = _build_or_resume(ctx, args, build_model)
    trained = wrap_model(model, ctx)
    saved_step = step
    timer = CheckpointTimer(ctx.checkpoint_seconds)  # the scheduler's interval, if it set one
    durations: collections.deque[float] = collections.deque(maxlen=10)
    with Reporter(ctx) as reporter:
        while step < args.steps and not stop_agreed(ctx):
            started = time.perf_counter()
            loss = _step(ctx, args, trained, optimizer, dataset, loss_fn, step)
            time.sleep(args.step_delay)  # counted as step time: it stands for more compute
            step += 1
            durations.append(time.perf_counter() - started)
            reporter.report(step, args.batch_size * len(durations) / sum(durations), loss=loss)
            _say(ctx, f"step {step} loss {loss:.4f} ({durations[-1] * 1000:.1f} ms)")
            every = args.checkpoint_every > 0 and step % args.checkpoint_every == 0
            if checkpoint_agreed(ctx, timer) or every:
                saved_step = _save(ctx, step, model, optimizer)
                timer.saved()
        if step < args.steps:  # asked to stop: keep everything done so far, exit 0
            if saved_step != step:
                _save(ctx, step, model, optimizer)
            _say(ctx, f"stopped at step {step}: "
                      + ("checkpoint saved" if step else "nothing to save") + ", exiting")
            return 0
    _finish(ctx, args, model)
    return 0


def _build_or_resume(ctx: JobContext, args: argparse.Namespace,
                     build_model: Callable[[], nn.Module]) -> tuple[nn.Module, Adam, int]:
    """The model and optimizer, restored from the newest checkpoint if there is one."""
    torch.manual_seed(derive_seed(args.seed, "init"))  # the same initial weights on every rank
    model = build_model()
    seed_everything(derive_seed(args.seed, "rank", ctx.rank))  # own dropout stream per rank
    optimizer = Adam(model.parameters(), lr=args.lr)
    resumed = load_checkpoint(ctx, model, optimizer)
    how = (f"resumed from step {resumed.step} (saved at world size {resumed.world_size})"
           if resumed else "fresh start")
    _say(ctx, f"attempt {ctx.attempt}: rank {ctx.rank}/{ctx.world_size}, {how}")
    return model, optimizer, resumed.step if resumed else 0


def _step(ctx: JobContext, args: argparse.Namespace, model: nn.Module,
          optimizer: torch.optim.Optimizer, dataset: Dataset, loss_fn: LossFn,
          step: int) -> float:
    inputs, targets = dataset
    order = torch.Generator().manual_seed(derive_seed(args.seed, "batch", step))
    batch = torch.randperm(len(inputs), generator=order)[:args.batch_size]
    shard = batch[ctx.rank::ctx.world_size]
    model.train()
    optimizer.zero_grad(set_to_none=True)
    loss = loss_fn(model(inputs[shard]), targets[shard])
    loss.backward()  # DDP averages the gradients: the mean over the global batch
    optimizer.step()
    return loss.item()


def _save(ctx: JobContext, step: int, model: nn.Module,
          optimizer: torch.optim.Optimizer) -> int:
    started = time.perf_counter()
    save_checkpoint(ctx, step, model, optimizer)
    _say(ctx, f"checkpoint step {step} saved in {(time.perf_counter() - started) * 1000:.1f} ms")
    return step


def _finish(ctx: JobContext, args: argparse.Namespace, model: nn.Module) -> None:
    if not ctx.is_chief:
        return
    digest = weights_digest(model)
    if args.digest_out is not None:
        args.digest_out.parent.mkdir(parents=True, exist_ok=True)
        args.digest_out.write_text(digest + "\n")
    print(f"done: {args.steps} steps, weights digest {digest}", flush=True)


def _say(ctx: JobContext, message: str) -> None:
    if ctx.is_chief:
        print(message, flush=True)
