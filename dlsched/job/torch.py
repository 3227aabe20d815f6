"""PyTorch helpers: process group from the job context, a collective stop decision, checkpoints
that resume bit-identically (model, optimizer, step, every rank's RNG), a weights digest.

Collective functions (``stop_agreed``, ``save_checkpoint``, ``load_checkpoint``) must be called
by every rank at the same point of the loop.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from dlsched.extras import MissingExtra, message

try:
    import torch
    import torch.distributed as dist
    from torch import nn
except ModuleNotFoundError as exc:
    raise MissingExtra(message("torch", "dlsched.job.torch", exc.name or "torch")) from None

from dlsched.job.checkpoint import CheckpointStore, CheckpointTimer
from dlsched.job.context import JobContext
from dlsched.job.seeding import seed_python

CHECKPOINT_FORMAT = 1


@dataclass(frozen=True)
class Resumed:
    """What ``load_checkpoint`` restored: the step to continue from and the saved extras."""

    step: int
    path: Path
    world_size: int  # the job's size when it saved; differs from now after an elastic restart
    extra: dict[str, Any] = field(default_factory=dict)


def init_distributed(ctx: JobContext, backend: str = "gloo",
                     timeout_seconds: float = 300.0) -> bool:
    """Join the job's process group when it has more than one worker; True if distributed.

    ``timeout_seconds`` bounds a collective whose peer died, so a survivor fails instead of
    hanging (the service then requeues the job from its last checkpoint).
    """
    if not ctx.is_distributed or dist.is_initialized():
        return dist.is_initialized()
    host = f"[{ctx.master_addr}]" if ":" in ctx.master_addr else ctx.master_addr
    dist.init_process_group(backend, init_method=f"tcp://{host}:{ctx.master_port}",
                            rank=ctx.rank, world_size=ctx.world_size,
                            timeout=timedelta(seconds=timeout_seconds))
    return True


def shutdown_distributed(synchronize: bool = False, timeout_seconds: float = 30.0) -> None:
    """Leave the job's process group.

    With ``synchronize`` (a normal finish) every rank first waits for the others: a rank that
    tears gloo down while a peer is still in its last collective can make that peer abort at
    exit ("terminate called without an active exception", seen in CI with two CPU workers).
    A peer that never arrives is waited for at most ``timeout_seconds`` (gloo), then the group
    is torn down anyway.
    """
    if not dist.is_initialized():
        return
    if synchronize:
        try:
            if dist.get_backend() == "gloo":
                dist.monitored_barrier(timeout=timedelta(seconds=timeout_seconds))
            else:
                dist.barrier()
        except RuntimeError:
            pass  # a peer is gone; tearing down is all that is left
    dist.destroy_process_group()


def device_for(ctx: JobContext) -> torch.device:
    """This worker's device: its GPU when CUDA is usable (the service narrows
    ``CUDA_VISIBLE_DEVICES`` per worker, so that is usually ``cuda:0``), else the CPU. A
    worker with a GPU memory limit (a fraction of a GPU) has it applied there
    (``limit_gpu_memory``)."""
    if not torch.cuda.is_available():
        return torch.device("cpu")
    device = torch.device("cuda", ctx.local_rank % torch.cuda.device_count())
    limit_gpu_memory(ctx, device)
    return device


def limit_gpu_memory(ctx: JobContext, device: torch.device) -> bool:
    """Cap PyTorch's caching allocator on ``device`` at the worker's share of the GPU's memory
    (``DLSCHED_GPU_MEMORY_FRACTION``, set by the service for a fractional job) with
    ``torch.cuda.set_per_process_memory_fraction``: an allocation beyond it raises an
    out-of-memory error in this worker instead of starving the GPU's other jobs. True if a
    limit was set."""
    if ctx.gpu_memory_fraction is None or device.type != "cuda":
        return False
    torch.cuda.set_per_process_memory_fraction(ctx.gpu_memory_fraction, device)
    return True


def wrap_model(model: nn.Module, ctx: JobContext) -> nn.Module:
    """``DistributedDataParallel(model)`` when distributed, the model itself otherwise."""
    if not (ctx.is_distributed and dist.is_initialized()):
        return model
    device = next(model.parameters()).device
    ids = [device.index] if device.type == "cuda" else None
    return nn.parallel.DistributedDataParallel(model, device_ids=ids)


def unwrap(model: nn.Module) -> nn.Module:
    """The module inside a DDP/DataParallel wrapper: its state dict has no ``module.`` prefix, so
    a checkpoint loads at any world size."""
    inner = getattr(model, "module", None)
    return inner if isinstance(inner, nn.Module) else model


def _collective_device() -> torch.device:
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def stop_agreed(ctx: JobContext) -> bool:
    """True on every rank if any rank was asked to stop; call between steps on all ranks.

    Signals reach the workers at slightly different moments. Deciding alone, one rank could
    stop after step 15 while another starts step 16 and waits forever in its all-reduce.
    """
    if not (ctx.is_distributed and dist.is_initialized()):
        return ctx.stop_requested
    flag = torch.tensor([int(ctx.stop_requested)], dtype=torch.int32,
                        device=_collective_device())
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    if flag.item() and not ctx.stop_requested:
        ctx.request_stop()
    return bool(flag.item())


def checkpoint_agreed(ctx: JobContext, timer: CheckpointTimer) -> bool:
    """True on every rank when the scheduler's checkpoint interval has passed on any rank
    (``CheckpointTimer``); call between steps on all ranks, then ``save_checkpoint`` and
    ``timer.saved()``. Without an interval (the same on every rank) no collective runs."""
    if timer.seconds is None:
        return False
    if not (ctx.is_distributed and dist.is_initialized()):
        return timer.due()
    flag = torch.tensor([int(timer.due())], dtype=torch.int32, device=_collective_device())
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item())


def barrier(ctx: JobContext) -> None:
    if ctx.is_distributed and dist.is_initialized():
        dist.barrier()


def seed_everything(seed: int, deterministic: bool = False) -> None:
    """Seed ``random``, NumPy and torch (all devices); optionally deterministic kernels."""
    seed_python(seed)
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True)


def rng_state() -> dict[str, Any]:
    """This process's generator states, as plain types that ``torch.load(weights_only=True)``
    accepts."""
    state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    try:
        import numpy
    except ImportError:
        return state
    name, keys, position, has_gauss, cached = numpy.random.get_state()
    state["numpy"] = [name, keys.tolist(), position, has_gauss, cached]
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(_as_tuples(state["python"]))
    cuda_states = state.get("cuda")
    if cuda_states and torch.cuda.is_available() and len(cuda_states) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(cuda_states)
    if "numpy" in state:
        import numpy

        name, keys, position, has_gauss, cached = state["numpy"]
        numpy.random.set_state((name, numpy.array(keys, dtype=numpy.uint32), position,
                                has_gauss, cached))


def _as_tuples(value: Any) -> Any:
    return tuple(_as_tuples(item) for item in value) if isinstance(value, list | tuple) else value


def _all_rng_states(ctx: JobContext) -> list[dict[str, Any]]:
    """Every rank's RNG state (a collective when distributed), indexed by rank."""
    mine = rng_state()
    if not (ctx.is_distributed and dist.is_initialized()):
        return [mine]
    gathered: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(gathered, mine)
    return gathered


def checkpoint_store(ctx: JobContext, keep: int = 3) -> CheckpointStore:
    return CheckpointStore(ctx.checkpoint_dir, keep=keep, suffix=".pt")


def save_checkpoint(ctx: JobContext, step: int, model: nn.Module,
                    optimizer: torch.optim.Optimizer | None = None,
                    extra: dict[str, Any] | None = None, keep: int = 3) -> Path | None:
    """Save after ``step`` steps (all ranks call; rank 0 writes atomically; then a barrier, so
    nobody goes on, or exits, before the file is complete). Returns the path on rank 0."""
    payload = {
        "format": CHECKPOINT_FORMAT,
        "step": step,
        "world_size": ctx.world_size,
        "model": unwrap(model).state_dict(),
        "optimizer": optimizer.state_dict() if optimizer is not None else None,
        "extra": dict(extra or {}),
        "rng": _all_rng_states(ctx),
    }
    saved = None
    if ctx.is_chief:
        saved = checkpoint_store(ctx, keep).save(step, lambda file: torch.save(payload, file))
    barrier(ctx)
    return saved.path if saved is not None else None


def load_checkpoint(ctx: JobContext, model: nn.Module,
                    optimizer: torch.optim.Optimizer | None = None, *,
                    weights_only: bool = True, restore_rng: bool = True) -> Resumed | None:
    """Restore the newest checkpoint into ``model``/``optimizer``; None when there is none.

    Rank 0 chooses the file and tells the others, so all ranks resume from the same step even if
    a save lands meanwhile. Each rank gets back its own RNG state; after an elastic restart
    ranks beyond the old size keep their own seeding. Set ``weights_only=False`` only for
    extras that need arbitrary pickles, from a directory you trust.
    """
    store = checkpoint_store(ctx)

    def read(path: Path) -> dict[str, Any]:
        return torch.load(path, map_location="cpu", weights_only=weights_only)

    found = store.load_latest(read) if ctx.is_chief else None
    step = _broadcast(ctx, found[0] if found is not None else None)
    if step is None:
        return None
    path = store.path_for(step)
    payload = found[1] if found is not None else read(path)
    unwrap(model).load_state_dict(payload["model"])
    if optimizer is not None and payload["optimizer"] is not None:
        optimizer.load_state_dict(payload["optimizer"])
    if restore_rng and ctx.rank < len(payload["rng"]):
        set_rng_state(payload["rng"][ctx.rank])
    return Resumed(step=int(payload["step"]), path=path,
                   world_size=int(payload["world_size"]), extra=payload["extra"])


def _broadcast(ctx: JobContext, value: Any) -> Any:
    if not (ctx.is_distributed and dist.is_initialized()):
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def weights_digest(model: nn.Module) -> str:
    """sha256 over (name, dtype, shape, raw bytes) of every state-dict tensor, names sorted.

    Equal digests mean bit-identical weights; the DDP ``module.`` prefix is not part of it.
    """
    digest = hashlib.sha256()
    state = unwrap(model).state_dict()
    for name in sorted(state):
        tensor = state[name].detach().to("cpu").contiguous()
        digest.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}|".encode())
        digest.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    return digest.hexdigest()
