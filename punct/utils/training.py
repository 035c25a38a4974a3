"""Pieces every training loop shares: seeding, the mutable training state, checkpoints by epoch,
and the torchrun (DistributedDataParallel) environment."""

from __future__ import annotations

import logging
import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

EPOCH_CHECKPOINT = re.compile(r"epoch-(\d+)\.pt")


def seed_everything(seed: int) -> None:
    """Seeds Python, numpy and torch, and asks torch for deterministic kernels: the same seed on the
    same machine (and thread count) then trains the same model.  Ops without a deterministic kernel
    (some CUDA ones) warn instead of failing."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    if torch.cuda.is_available():
        torch.backends.cudnn.benchmark = False
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


@dataclass
class TrainState:
    """What changes while training (kept out of the frozen config); saved in every checkpoint."""

    epoch: int = 0  # last finished epoch
    step: int = 0
    best_f1: float = -1.0  # best dev score so far (models selected on F1)
    best_epoch: int = 0
    history: List[Dict] = field(default_factory=list)


def epoch_checkpoints(exp_dir: Path) -> List[Tuple[int, Path]]:
    """``(epoch, path)`` of every ``epoch-N.pt`` in ``exp_dir``, oldest first."""
    found = []
    for path in Path(exp_dir).glob("epoch-*.pt"):
        match = EPOCH_CHECKPOINT.fullmatch(path.name)
        if match:
            found.append((int(match.group(1)), path))
    return sorted(found)


def latest_checkpoint(exp_dir: Path) -> Optional[Path]:
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


def init_distributed(dist: DistInfo, device: torch.device) -> None:
    """Joins the process group (NCCL on CUDA, gloo on CPU) when there is more than one process."""
    if dist.world_size > 1 and not torch.distributed.is_initialized():
        backend = "nccl" if device.type == "cuda" else "gloo"
        torch.distributed.init_process_group(backend=backend, rank=dist.rank, world_size=dist.world_size)
        logging.info("rank %d of %d joined the %s process group", dist.rank, dist.world_size, backend)


def setup_distributed(device_name: str) -> Tuple[DistInfo, torch.device]:
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
