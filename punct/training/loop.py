"""Pieces every training loop shares: seeding, the mutable training state, checkpoints by epoch,
the torchrun (DistributedDataParallel) environment, per-rank batches, DataLoader options and
mixed precision (``--amp``)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import random
import re
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from punct.utils.device import has_native_bf16
from punct.utils.logging import setup_logging

EPOCH_CHECKPOINT = re.compile(r"epoch-(\d+)\.pt")


DETERMINISTIC_ENV = "PUNCT_DETERMINISTIC"  # auto (default), true or false


def wants_determinism(device_type: str) -> bool:
    """Whether a training on ``device_type`` asks torch for deterministic kernels: ``PUNCT_DETERMINISTIC``
    true or false, else (auto) on for the CPU and off on cuda.

    On the CPU the deterministic kernels cost little, and the tests rely on the same seed training the
    same model.  On a GPU they cost speed: cuDNN may not pick its fastest convolution algorithms,
    cuBLAS needs a fixed workspace, and ops without a deterministic CUDA kernel (the CTC loss' backward,
    scatter/index additions) warn on every call; so a GPU run is reproducible only up to floating-point
    summation order unless ``PUNCT_DETERMINISTIC=true``."""
    value = os.environ.get(DETERMINISTIC_ENV, "auto").strip().lower()
    if value not in ("auto", "true", "false"):
        raise ValueError(f"{DETERMINISTIC_ENV} must be auto, true or false, not {value!r}")
    if value == "auto":
        return device_type != "cuda"
    return value == "true"


def seed_everything(seed: int, device_type: str = "cpu") -> None:
    """Seeds Python, numpy and torch, and (see :func:`wants_determinism`) asks torch for deterministic
    kernels: the same seed on the same machine (and thread count) then trains the same model.  Ops
    without a deterministic kernel (some CUDA ones) warn instead of failing."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    deterministic = wants_determinism(device_type)
    torch.use_deterministic_algorithms(deterministic, warn_only=True)
    if deterministic and torch.cuda.is_available():
        torch.backends.cudnn.benchmark = False
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


@dataclass
class TrainState:
    """What changes while training (kept out of the frozen config); saved in every checkpoint."""

    epoch: int = 0  # last finished epoch
    step: int = 0
    best_f1: float = -1.0  # best dev score so far (an F1; for train_mm: minus the dev loss, or the epoch under last)
    best_epoch: int = 0
    history: list[dict] = field(default_factory=list)
    amp: str = ""  # the precision --amp fastest chose (none or bf16), kept for a resume; empty: not chosen by it
    # the epoch in progress (epoch + 1) at a mid-epoch checkpoint (punct.training.resume): its batches trained so far
    # and the running sums its mean train loss is made of; 0 and empty at an epoch's end
    batches_done: int = 0
    epoch_sums: dict[str, float] = field(default_factory=dict)


def epoch_checkpoints(exp_dir: Path) -> list[tuple[int, Path]]:
    """``(epoch, path)`` of every ``epoch-N.pt`` in ``exp_dir``, oldest first."""
    found = []
    for path in Path(exp_dir).glob("epoch-*.pt"):
        match = EPOCH_CHECKPOINT.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def latest_checkpoint(exp_dir: Path) -> Path | None:
    checkpoints = epoch_checkpoints(exp_dir)
    return checkpoints[-1][1] if checkpoints else None


@dataclass(frozen=True)
class DistInfo:
    """This process' place in a torchrun job (a single process when torchrun is not used)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def dist_from_env() -> DistInfo:
    """Rank and world size from torchrun's environment variables."""
    return DistInfo(
        int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1)), int(os.environ.get("LOCAL_RANK", 0))
    )


def start_rank_logging(exp_dir: Path) -> DistInfo:
    """Rank 0 creates ``exp_dir`` and logs to exp_dir/log/log-train-<time>; other ranks log warnings only.
    Returns this process' place in the torchrun job (before the process group is joined)."""
    dist = dist_from_env()
    if dist.is_main:
        exp_dir.mkdir(parents=True, exist_ok=True)
        setup_logging(exp_dir / "log" / f"log-train-{time.strftime('%Y-%m-%d-%H-%M-%S')}")
    else:
        setup_logging(level=logging.WARNING)
    return dist


def init_distributed(dist: DistInfo, device: torch.device) -> None:
    """Joins the process group (NCCL on CUDA, gloo on CPU) when there is more than one process."""
    if dist.world_size > 1 and not torch.distributed.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        torch.distributed.init_process_group(backend=backend, rank=dist.rank, world_size=dist.world_size)
        logging.info("rank %d of %d joined the %s process group", dist.rank, dist.world_size, backend)


def setup_distributed(device_name: str) -> tuple[DistInfo, torch.device]:
    """torchrun's environment, this rank's device (cuda:<local rank> on GPUs) and the process group."""
    from punct.utils.device import resolve_device

    dist = dist_from_env()
    device = resolve_device(device_name)
    if device.type == "cuda" and dist.world_size > 1:
        device = torch.device("cuda", dist.local_rank)
        torch.cuda.set_device(device)
    init_distributed(dist, device)
    return dist, device


def prune_checkpoints(exp_dir: Path, keep: int, current: int) -> None:
    """Removes ``epoch-N.pt`` older than the last ``keep`` epochs (``keep <= 0`` keeps all)."""
    if keep <= 0:
        return
    for epoch, path in epoch_checkpoints(exp_dir):
        if epoch <= current - keep:
            path.unlink()


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DistributedDataParallel wrapper (the model itself otherwise)."""
    return model.module if isinstance(model, torch.nn.parallel.DistributedDataParallel) else model


def wrap_ddp(
    model: torch.nn.Module, device: torch.device, dist: DistInfo, find_unused_parameters: bool = False
) -> torch.nn.Module:
    """``model`` in DistributedDataParallel when there are several ranks (unchanged otherwise).

    ``find_unused_parameters``: for models with parameters outside the loss' graph (a BERT encoder's
    pooler, a head without labels in a batch); DDP would otherwise wait for their gradients forever."""
    if dist.world_size == 1:
        return model
    return torch.nn.parallel.DistributedDataParallel(
        model,
        device_ids=[device.index] if device.type == "cuda" else None,
        find_unused_parameters=find_unused_parameters,
    )


def rank_batches(order: Sequence[int], batch_size: int, dist: DistInfo = DistInfo()) -> list[list[int]]:
    """This rank's batches of ``order`` (the same order on every rank), ``batch_size`` items each.

    Global batch k is ``order[k * B * W : (k + 1) * B * W]`` (B = batch_size, W = world size) and rank r
    takes its items r, r + W, ...: the ranks' batches of step k together are exactly what one process
    with batch size B * W trains on at step k.  The order is cut to a multiple of W first, so that every
    rank has as many batches as the others, of the same sizes (one process: nothing is cut)."""
    world = dist.world_size
    usable = len(order) - len(order) % world
    step = batch_size * world
    return [list(order[start : min(start + step, usable)][dist.rank :: world]) for start in range(0, usable, step)]


# how a training epoch groups its examples: random (a shuffled order cut into batches) or length
# (:func:`like_length_batches`, the batches in shuffled order)
BATCHINGS = ("random", "length")


def check_batching(batching: str) -> None:
    if batching not in BATCHINGS:
        raise ValueError(f"batching must be one of {', '.join(BATCHINGS)}, got {batching!r}")


def like_length_batches(
    order: Sequence[int], lengths: Sequence[int], batch_size: int, world_size: int = 1, group: int = 0
) -> list[list[int]]:
    """The global batches (``batch_size`` x ``world_size`` items) of a shuffled ``order`` whose items are of like
    ``lengths``: the order, cut to a multiple of ``world_size`` as :func:`rank_batches` cuts it, sorted by length
    (ties keep their shuffled order; with ``group`` > 0 within each run of ``group`` batches of it, so that a batch's
    items change from epoch to epoch) and cut into batches.  The caller shuffles the batches; rank r of a global
    batch takes its items r, r + W, ... as in :func:`rank_batches`.  A padded batch then computes few padding
    positions: random batches of egs/parczech's small segments (2.9-12.4 s, deciles) pad to 1.9 x their frames."""
    usable = len(order) - len(order) % world_size
    step = batch_size * world_size
    run = group * step if group > 0 else max(usable, 1)
    ordered: list[int] = []
    for start in range(0, usable, run):
        ordered += sorted(order[start : min(start + run, usable)], key=lambda i: lengths[i])
    return [ordered[start : start + step] for start in range(0, usable, step)]


class RankBatchSampler(torch.utils.data.Sampler):
    """A DataLoader ``batch_sampler``: :func:`rank_batches` of ``torch.randperm(num_items, generator)``, or with
    the items' ``lengths`` this rank's share of :func:`like_length_batches` of that order (sorted within runs of
    ``length_group`` batches; 0: all at once), taken in an order drawn from ``generator``.

    Give the DataLoader the same ``generator``: it draws its worker seed from it before the permutation,
    exactly as with ``shuffle=True, generator=generator``, so one process sees the same batches (without
    ``lengths``) as a DataLoader(batch_size, shuffle=True, generator) would give it."""

    def __init__(
        self,
        num_items: int,
        batch_size: int,
        dist: DistInfo,
        generator: torch.Generator,
        lengths: Sequence[int] | None = None,
        length_group: int = 0,
    ) -> None:
        super().__init__()
        self.num_items, self.batch_size, self.dist, self.generator = num_items, batch_size, dist, generator
        if lengths is not None and len(lengths) != num_items:
            raise ValueError(f"{len(lengths)} lengths for {num_items} items")
        self.lengths, self.length_group = lengths, length_group

    def __len__(self) -> int:
        usable = self.num_items - self.num_items % self.dist.world_size
        return -(-usable // (self.batch_size * self.dist.world_size))

    def __iter__(self) -> Iterator[list[int]]:
        order = torch.randperm(self.num_items, generator=self.generator).tolist()
        if self.lengths is None:
            yield from rank_batches(order, self.batch_size, self.dist)
            return
        world = self.dist.world_size
        global_batches = like_length_batches(order, self.lengths, self.batch_size, world, self.length_group)
        for k in torch.randperm(len(global_batches), generator=self.generator).tolist():
            yield global_batches[k][self.dist.rank :: world]


def loader_options(num_workers: int, device: torch.device) -> dict[str, Any]:
    """DataLoader arguments: ``num_workers`` loading processes, and page-locked (pinned) batches when they
    go to a GPU, so that the host-to-device copies are faster and can overlap computation."""
    return {"num_workers": num_workers, "pin_memory": device.type == "cuda"}


AMP_MODES = ("none", "bf16", "fp16")
# auto: bf16 where the device computes in it natively, else none; fastest: the faster of none and bf16 by
# timing the loop's own step (punct.training.precision.training_amp, which resolves it before Amp is made)
AMP_CHOICES = AMP_MODES + ("auto", "fastest")


def resolve_amp(mode: str, device: torch.device) -> str:
    """``--amp auto`` -> ``bf16`` on devices with native bfloat16 (:func:`has_native_bf16`), else ``none``
    (emulated bfloat16 is slower than float32); other modes are returned as they are."""
    if mode != "auto":
        return mode
    resolved = "bf16" if has_native_bf16(device) else "none"
    logging.info("--amp auto: %s on %s", resolved, device)
    return resolved


@dataclass(frozen=True)
class Amp:
    """Mixed precision of a training loop (``--amp none|bf16|fp16|auto``; auto is resolved on construction,
    fastest before it: :func:`punct.training.precision.training_amp`).

    :meth:`autocast` wraps the forward passes of training; the losses are computed on the outputs cast
    to float32.  :meth:`step` is backward, optional gradient clipping and the optimizer step through a
    GradScaler that is active for fp16 only: bf16 has float32's exponent range, so its gradients do not
    underflow.  Parameters, optimizer state and checkpoints stay float32.

    fp16 needs CUDA (CPU autocast is meant for bf16; an fp16 request there is refused, not silently
    changed); bf16 runs on the CPU and on GPUs that support it.  The AM, BERT and TDNN loops
    checkpoint the GradScaler's state (:func:`punct.training.resume.scaler_state`) and ``--resume`` restores it;
    after the cross-attention loop's resume it starts again from its initial scale and settles in a few steps.
    """

    mode: str = "none"
    device_type: str = "cpu"
    scaler: torch.amp.GradScaler = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.mode not in AMP_CHOICES:
            raise ValueError(f"--amp must be one of {AMP_CHOICES}, got {self.mode!r}")
        if self.mode == "fastest":
            raise ValueError(
                "--amp fastest is resolved by timing a training step: punct.training.precision.training_amp"
            )
        object.__setattr__(self, "mode", resolve_amp(self.mode, torch.device(self.device_type)))
        if self.mode == "fp16" and self.device_type != "cuda":
            raise ValueError(
                f"--amp fp16 needs a CUDA device (the device is {self.device_type}); "
                "use --amp bf16 (or none) on the CPU"
            )
        if self.mode == "bf16" and self.device_type == "cuda" and not torch.cuda.is_bf16_supported():
            raise ValueError("--amp bf16: this GPU does not support bfloat16; use --amp fp16")
        object.__setattr__(self, "scaler", torch.amp.GradScaler("cuda", enabled=self.mode == "fp16"))

    @property
    def enabled(self) -> bool:
        return self.mode != "none"

    @property
    def dtype(self) -> torch.dtype:
        return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(self.mode, torch.float32)

    def autocast(self) -> AbstractContextManager:
        if not self.enabled:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def step(
        self,
        loss: torch.Tensor,
        optimizer: torch.optim.Optimizer,
        parameters: Iterable[torch.Tensor] = (),
        grad_clip: float = 0.0,
    ) -> None:
        """Backward of ``loss`` (scaled for fp16), clipping of the true gradients of ``parameters`` to norm
        ``grad_clip`` when it is > 0, and the optimizer step (skipped by fp16 when a gradient is inf/nan)."""
        self.scaler.scale(loss).backward()
        if grad_clip > 0:
            self.scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(parameters, grad_clip)
        self.scaler.step(optimizer)
        self.scaler.update()


NO_AMP = Amp()  # float32 throughout (its GradScaler is disabled, hence stateless and shareable)


def add_amp_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--amp",
        choices=AMP_CHOICES,
        default="none",
        help="mixed precision of the training forward passes: bf16 (CPU or GPU), fp16 (CUDA only, "
        "with loss scaling), auto (bf16 where the hardware computes in it natively, else none), "
        "fastest (none or bf16, whichever a timed training step here says is faster) "
        "or none; losses, dev scoring and checkpoints stay float32",
    )


def add_resume_device_amp_arguments(parser: argparse.ArgumentParser, amp: bool = True) -> None:
    """``--resume``, ``--device`` and ``--amp`` of the training entry points that checkpoint every epoch
    (``amp`` False: the config has an ``amp`` field, whose flag overrides it)."""
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest checkpoint in --exp-dir: epoch-N.pt or, with save_every_n_steps, a newer "
        "mid-epoch epoch-E-batch-B.pt",
    )
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (under torchrun: cuda:<local rank>)")
    if amp:
        add_amp_argument(parser)
