"""The PyTorch helpers in one process: digest, checkpoint round trip (model, optimizer, RNG),
stop decision and process group when there is a single worker."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from torch import nn  # noqa: E402 (after the skip)

from dlsched.job import CheckpointError, JobContext, derive_seed  # noqa: E402
from dlsched.job.context import JobEnvError  # noqa: E402
from dlsched.job.torch import (  # noqa: E402
    device_for,
    init_distributed,
    load_checkpoint,
    save_checkpoint,
    stop_agreed,
    weights_digest,
    wrap_model,
)


class Wrapper(nn.Module):
    """Stands for DistributedDataParallel: the real model under ``.module``."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module


def make_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 2))


def train(model: nn.Module, optimizer: torch.optim.Optimizer, steps: range) -> None:
    for step in steps:
        data = torch.Generator().manual_seed(derive_seed("test", step))
        inputs, targets = torch.randn(4, 8, generator=data), torch.randint(0, 2, (4,),
                                                                           generator=data)
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(inputs), targets).backward()
        optimizer.step()


def single_worker(tmp_path: Path) -> JobContext:
    return JobContext.from_env({"DLSCHED_CHECKPOINT_DIR": str(tmp_path)})


def test_digest_is_stable_sensitive_and_ignores_the_ddp_wrapper() -> None:
    model = make_model()
    digest = weights_digest(model)
    assert digest == weights_digest(make_model()) and len(digest) == 64
    assert weights_digest(Wrapper(model)) == digest
    with torch.no_grad():
        model[0].weight[0, 0] += 1e-7
    assert weights_digest(model) != digest


def test_digest_of_other_dtypes_and_buffers() -> None:
    model = nn.BatchNorm1d(4).to(torch.bfloat16)
    assert len(weights_digest(model)) == 64  # bfloat16 has no NumPy dtype; bytes still hash


@pytest.mark.parametrize("restore_rng", [True, False], ids=["rng-restored", "rng-not-restored"])
def test_resume_gives_identical_weights_only_with_rng(tmp_path: Path, restore_rng: bool) -> None:
    ctx = single_worker(tmp_path)
    torch.manual_seed(1)
    straight = make_model()
    torch.manual_seed(1)
    optimizer = torch.optim.Adam(straight.parameters(), lr=0.01)
    train(straight, optimizer, range(6))

    model = make_model()
    torch.manual_seed(1)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    train(model, optimizer, range(3))
    save_checkpoint(ctx, 3, model, optimizer, extra={"epoch": 0})
    torch.manual_seed(999)  # the restarted process: other RNG state, fresh model and optimizer
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    resumed = load_checkpoint(ctx, model, optimizer, restore_rng=restore_rng)
    assert resumed is not None and (resumed.step, resumed.world_size) == (3, 1)
    assert resumed.extra == {"epoch": 0}
    train(model, optimizer, range(3, 6))
    assert (weights_digest(model) == weights_digest(straight)) is restore_rng  # dropout


def test_only_the_latest_k_and_nothing_to_resume(tmp_path: Path) -> None:
    ctx = single_worker(tmp_path)
    model = make_model()
    assert load_checkpoint(ctx, model) is None
    for step in range(5):
        save_checkpoint(ctx, step, Wrapper(model), keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-000000000003.pt",
                                                          "ckpt-000000000004.pt"]
    resumed = load_checkpoint(ctx, Wrapper(make_model()))  # no "module." prefix either way
    assert resumed is not None and resumed.step == 4


def test_weights_only_refuses_arbitrary_objects(tmp_path: Path) -> None:
    ctx = single_worker(tmp_path)
    save_checkpoint(ctx, 1, make_model(), extra={"path": Path("/x")})
    with pytest.raises(CheckpointError, match="none of 1 checkpoints"):
        load_checkpoint(ctx, make_model())
    resumed = load_checkpoint(ctx, make_model(), weights_only=False)
    assert resumed is not None and resumed.extra == {"path": Path("/x")}


def test_single_worker_needs_no_process_group(tmp_path: Path) -> None:
    ctx = single_worker(tmp_path)
    model = make_model()
    assert init_distributed(ctx) is False
    assert wrap_model(model, ctx) is model
    assert device_for(ctx).type in {"cpu", "cuda"}
    assert stop_agreed(ctx) is False
    ctx.request_stop()
    assert stop_agreed(ctx) is True


def test_device_for_applies_the_services_gpu_memory_limit_when_cuda_is_present(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CPU-only machine: CUDA is faked; what is checked is the call PyTorch gets."""
    calls: list[tuple[float, object]] = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction",
                        lambda fraction, device: calls.append((fraction, device)))
    limited = JobContext.from_env({"DLSCHED_GPU_MEMORY_FRACTION": "0.25"}, tmp_path)
    assert limited.gpu_memory_fraction == 0.25
    assert device_for(limited) == torch.device("cuda", 0)
    assert calls == [(0.25, torch.device("cuda", 0))]
    device_for(JobContext.from_env({}, tmp_path))  # no limit asked: none set
    assert len(calls) == 1
    with pytest.raises(JobEnvError, match="DLSCHED_GPU_MEMORY_FRACTION must be in"):
        JobContext.from_env({"DLSCHED_GPU_MEMORY_FRACTION": "1.5"}, tmp_path)
