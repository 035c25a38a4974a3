"""Training the punctuation TDNN: config, one epoch, checkpoints, dev selection, DDP.

One process trains on its own; under ``torchrun`` (WORLD_SIZE > 1) every rank trains on its
shard of each epoch's order (``EpochSampler``) inside DistributedDataParallel (gloo on CPU, NCCL
on GPU), and rank 0 evaluates dev and writes checkpoints:
``exp/tdnn/epoch-N.pt`` (model, optimizer, state) and ``best-valid-f1.pt`` (best dev overall F1).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Optional, Union

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

from punct.fusion.dataset import FusedWindowDataset, FusionCorpus, UtteranceDataset, collate_utterances
from punct.fusion.infer import corpus_predictions
from punct.fusion.sampling import BALANCE_MODES, EpochSampler
from punct.fusion.tdnn import PunctTdnn, TdnnConfig, count_parameters
from punct.metrics import score
from punct.utils.training import DistInfo, TrainState
from punct.utils.atomic import atomic_path

Pathlike = Union[str, Path]


@dataclass(frozen=True)
class TrainTdnnConfig:
    """conf/tdnn.yaml (paper values) and conf/tdnn_mini.yaml."""

    model: TdnnConfig = field(default_factory=TdnnConfig)  # input_dim is replaced by the shards' widths
    # window: one 301-frame window per word, cut at load time (EfficientPunct); utterance: the conv stack
    # runs once per utterance and each word reads its slice (same network, ~window/words-per-window less
    # compute; BatchNorm statistics then come from whole utterances, and balance becomes class weights).
    example_unit: str = "window"
    utterances_per_batch: int = 8  # example_unit=utterance: utterances per batch (per rank)
    balance: str = "oversample"  # oversample (EfficientPunct), weighted or none; see punct.fusion.sampling
    optimizer: str = "sgd"  # sgd or adam
    lr: float = 1e-5
    momentum: float = 0.9  # sgd only
    weight_decay: float = 0.0
    batch_size: int = 128  # per rank
    epochs: int = 25
    loss_reduction: str = "sum"  # sum over the batch (the authors' code) or mean
    epoch_limit: int = 0  # >0: at most this many examples per epoch (after balancing), for quick runs
    group_utterances: int = 0  # >0: shuffle in blocks of this many utterances (cache locality at scale)
    cache_utterances: int = 256  # LRU cache of utterance matrices per data-loader worker
    num_workers: int = 2  # DataLoader workers cutting windows
    prefetch_factor: int = 4  # batches prefetched per worker
    log_interval: int = 50  # batches between loss log lines

    def __post_init__(self) -> None:
        if self.balance not in BALANCE_MODES:
            raise ValueError(f"balance must be one of {BALANCE_MODES}, got {self.balance!r}")
        if self.example_unit not in ("window", "utterance"):
            raise ValueError(f"example_unit must be window or utterance, got {self.example_unit!r}")
        if self.optimizer not in ("sgd", "adam"):
            raise ValueError(f"optimizer must be sgd or adam, got {self.optimizer!r}")
        if self.loss_reduction not in ("sum", "mean"):
            raise ValueError(f"loss_reduction must be sum or mean, got {self.loss_reduction!r}")


def build_model(cfg: TrainTdnnConfig, input_dim: int) -> PunctTdnn:
    return PunctTdnn(dataclasses.replace(cfg.model, input_dim=input_dim))


def make_optimizer(cfg: TrainTdnnConfig, model: nn.Module) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    return torch.optim.Adam(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)


def save_checkpoint(path: Path, model: PunctTdnn, optimizer, state: TrainState, cfg: TrainTdnnConfig) -> None:
    with atomic_path(path, suffix=".pt") as tmp:
        torch.save(
            {
                "model": model.state_dict(),
                "model_config": dataclasses.asdict(model.config),
                "optimizer": optimizer.state_dict() if optimizer is not None else None,
                "state": dataclasses.asdict(state),
                "train_config": dataclasses.asdict(cfg),
            },
            tmp,
        )


def load_model(path: Pathlike, device: torch.device = torch.device("cpu")) -> PunctTdnn:
    """A trained TDNN from a checkpoint, in eval mode."""
    ckpt = torch.load(path, map_location=device, weights_only=False)
    model_cfg = dict(ckpt["model_config"])
    for key in ("channels", "kernels", "dilations"):
        model_cfg[key] = tuple(model_cfg[key])
    model = PunctTdnn(TdnnConfig(**model_cfg))
    model.load_state_dict(ckpt["model"])
    return model.to(device).eval()


def dev_overall_f1(model: PunctTdnn, corpus: FusionCorpus, device: torch.device) -> Dict:
    ref, post = corpus_predictions(model, corpus, device)
    scores = score(ref, post.argmax(axis=1), corpus.classes)
    return {"overall_f1": scores.overall["f1"], "per_class_f1": {c: scores.per_class[c]["f1"] for c in corpus.classes[1:]}}


def train_tdnn(
    cfg: TrainTdnnConfig,
    train_corpus: FusionCorpus,
    dev_corpus: Optional[FusionCorpus],
    exp_dir: Pathlike,
    device: torch.device,
    seed: int = 42,
    resume: Optional[Pathlike] = None,
    dist: DistInfo = DistInfo(),
    progress: bool = True,
) -> PunctTdnn:
    """Trains for ``cfg.epochs`` epochs; returns the (unwrapped) model as trained by the last epoch.

    Args:
      resume: a checkpoint to continue from (model, optimizer and state), or None.
      dist: this process's rank (rank 0 evaluates and writes checkpoints).
    """
    exp_dir = Path(exp_dir)
    torch.manual_seed(seed)
    model = build_model(cfg, train_corpus.input_dim).to(device)
    optimizer = make_optimizer(cfg, model)
    state = TrainState()
    if resume is not None:
        ckpt = torch.load(resume, map_location=device, weights_only=False)
        model.load_state_dict(ckpt["model"])
        if ckpt.get("optimizer"):
            optimizer.load_state_dict(ckpt["optimizer"])
        state = TrainState(**ckpt["state"])
        logging.info("resumed from %s after epoch %d (best dev F1 %.4f at epoch %d)", resume, state.epoch, state.best_f1, state.best_epoch)
    if dist.is_main:
        logging.info(
            "TDNN: %d parameters, input %d = text %d + acoustic %d, window %d -> %d frames",
            count_parameters(model), train_corpus.input_dim, train_corpus.text_dim, train_corpus.acoustic_dim,
            cfg.model.window, model.config.output_frames,
        )
        logging.info("train words per class %s: %s", list(train_corpus.classes), train_corpus.class_counts().tolist())
    net: nn.Module = model
    if dist.world_size > 1:
        net = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    loader_args = dict(num_workers=cfg.num_workers, pin_memory=device.type == "cuda")
    if cfg.num_workers > 0:
        loader_args.update(persistent_workers=True, prefetch_factor=cfg.prefetch_factor)
    if cfg.example_unit == "window":
        sampler = EpochSampler(
            train_corpus.labels, cfg.balance, seed=seed, rank=dist.rank, world_size=dist.world_size,
            groups=train_corpus.example_utt, group_size=cfg.group_utterances, limit=cfg.epoch_limit,
        )
        dataset = FusedWindowDataset(train_corpus, context=cfg.model.context)
        loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler, **loader_args)
        criterion = nn.CrossEntropyLoss(reduction=cfg.loss_reduction)
    else:
        num_utts = len(train_corpus.utterances)
        sampler = EpochSampler(
            np.zeros(num_utts, dtype=np.int64), "none", seed=seed, rank=dist.rank, world_size=dist.world_size,
            limit=cfg.epoch_limit,
        )
        loader = DataLoader(
            UtteranceDataset(train_corpus), batch_size=cfg.utterances_per_batch, sampler=sampler,
            collate_fn=functools.partial(collate_utterances, context=cfg.model.context), **loader_args,
        )
        criterion = nn.CrossEntropyLoss(weight=class_weights(cfg, train_corpus).to(device), reduction=cfg.loss_reduction)

    for epoch in range(state.epoch + 1, cfg.epochs + 1):
        sampler.set_epoch(epoch)
        net.train()
        start, total_loss, seen = time.time(), 0.0, 0
        batches = loader
        if progress and dist.is_main:
            from tqdm import tqdm

            batches = tqdm(loader, desc=f"epoch {epoch}", unit="batch", leave=False)
        for i, batch in enumerate(batches, 1):
            batch = [t.to(device, non_blocking=True) for t in batch]
            labels = batch[-1]
            optimizer.zero_grad(set_to_none=True)
            if cfg.example_unit == "window":
                logits = net(batch[0])
            else:
                logits = net(batch[0], utterance=batch[1], centres=batch[2])
            loss = criterion(logits, labels)
            loss.backward()
            optimizer.step()
            state.step += 1
            batch_loss = loss.item() / (len(labels) if cfg.loss_reduction == "sum" else 1)
            total_loss += batch_loss * len(labels)
            seen += len(labels)
            if dist.is_main and cfg.log_interval and i % cfg.log_interval == 0:
                logging.info("epoch %d batch %d/%d: loss/example %.4f", epoch, i, len(loader), batch_loss)
        state.epoch = epoch
        record = {"epoch": epoch, "train_loss": total_loss / max(seen, 1), "seconds": round(time.time() - start, 1)}
        if dist.is_main:
            if dev_corpus is not None:
                record.update(dev_overall_f1(model, dev_corpus, device))
            state.history.append(record)
            logging.info("epoch %d: %s", epoch, record)
            exp_dir.mkdir(parents=True, exist_ok=True)
            save_checkpoint(exp_dir / f"epoch-{epoch}.pt", model, optimizer, state, cfg)
            f1 = record.get("overall_f1", -record["train_loss"])
            if f1 > state.best_f1:
                state.best_f1, state.best_epoch = f1, epoch
                save_checkpoint(exp_dir / f"epoch-{epoch}.pt", model, optimizer, state, cfg)
                with atomic_path(exp_dir / "best-valid-f1.pt", suffix=".pt") as tmp:
                    shutil.copyfile(exp_dir / f"epoch-{epoch}.pt", tmp)
                logging.info("epoch %d is the best so far (dev overall F1 %.4f)", epoch, f1)
        if dist.world_size > 1:
            check_ranks_agree(model)
            torch.distributed.barrier()
    return model


def class_weights(cfg: TrainTdnnConfig, corpus: FusionCorpus) -> torch.Tensor:
    """Loss weights of the utterance mode: majority count / class count (the expected effect of
    oversampling to the majority count); all ones for ``balance: none``; absent classes weigh 0."""
    counts = corpus.class_counts().astype(np.float64)
    if cfg.balance == "none":
        return torch.ones(len(counts), dtype=torch.float32)
    weights = np.where(counts > 0, counts.max() / np.maximum(counts, 1), 0.0)
    return torch.tensor(weights, dtype=torch.float32)


def check_ranks_agree(model: nn.Module, atol: float = 1e-6) -> None:
    """Raises if the ranks' parameters have drifted apart (DDP keeps them equal after every step)."""
    flat = torch.cat([p.detach().reshape(-1).float() for p in model.parameters()])
    high, low = flat.clone(), flat.clone()
    torch.distributed.all_reduce(high, op=torch.distributed.ReduceOp.MAX)
    torch.distributed.all_reduce(low, op=torch.distributed.ReduceOp.MIN)
    spread = float((high - low).abs().max())
    if spread > atol:
        raise RuntimeError(f"ranks disagree: parameters differ by up to {spread:.3g} across ranks")
    logging.info("parameters agree across %d ranks (max difference %.3g)", torch.distributed.get_world_size(), spread)
