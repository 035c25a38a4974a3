"""Training the punctuation TDNN: one epoch, dev selection, DDP (its config: :mod:`punct.models.punct_tdnn.config`;
the checkpoints it writes: :mod:`punct.models.punct_tdnn.checkpoint`).

One process trains on its own; under ``torchrun`` (WORLD_SIZE > 1) every rank trains on its
share of each epoch's examples (:mod:`punct.models.punct_tdnn.reader`: each loader worker reads only its own
utterances) inside DistributedDataParallel (gloo on CPU, NCCL on GPU), and rank 0 evaluates dev and writes checkpoints:
``exp/tdnn/epoch-N.pt`` (model, optimizer, state) and ``best-valid-f1.pt`` (best dev ``dev_metric`` of the
punctuation head).  With a case head (``model.case_classes`` > 0) the loss is
``(1 - case_weight) * L_punct + case_weight * L_case``.  ``first_word: exclude`` (ParCzech segments, as the
thesis; see :mod:`punct.labels`) leaves each cut's first word out of the loss, the class balance and the dev
scores.

Mixed precision (``amp``: bf16 or fp16, :class:`punct.training.loop.Amp`): the TDNN's training forward
pass runs under autocast and the loss on float32 logits; dev scoring and checkpoints are float32.

Resume: with ``save_every_n_steps`` also ``epoch-E-batch-B.pt`` within an epoch; a resume from it or from an
``epoch-N.pt`` trains the weights of the uninterrupted run (:mod:`punct.training.resume`).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import shutil
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from lhotse.utils import Pathlike
from torch import nn
from torch.utils.data import DataLoader, Dataset, default_collate

from punct.labels import IGNORE_INDEX
from punct.models.punct_tdnn.checkpoint import save_checkpoint
from punct.models.punct_tdnn.config import TrainTdnnConfig
from punct.models.punct_tdnn.dataset import FusedWindowDataset, FusionCorpus, UtteranceDataset, collate_utterances
from punct.models.punct_tdnn.infer import corpus_predictions
from punct.models.punct_tdnn.reader import EpochPlanner, ShardedEpochs
from punct.models.punct_tdnn.tdnn import PunctTdnn, count_parameters, split_heads
from punct.scoring.punct_scores import score
from punct.training import resume as train_resume
from punct.training.batch_norm import recompute_batch_norm_stats
from punct.training.checkpoint import load_checkpoint
from punct.training.class_weights import inverse_frequency_weights
from punct.training.curves import NO_CURVES, TrainingCurves, curves_for
from punct.training.loop import Amp, DistInfo, TrainState, seed_everything
from punct.training.optim import fused_adam_flag
from punct.training.precision import LossOf, check_amp, probe_index_batches, probe_loss_of, training_amp
from punct.utils.atomic import atomic_path
from punct.utils.progress import progress as progress_bar


def build_model(cfg: TrainTdnnConfig, input_dim: int) -> PunctTdnn:
    return PunctTdnn(dataclasses.replace(cfg.model, input_dim=input_dim))


def make_optimizer(cfg: TrainTdnnConfig, model: nn.Module) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    return torch.optim.Adam(
        model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, fused=fused_adam_flag(model.parameters())
    )


def dev_overall_f1(model: PunctTdnn, corpus: FusionCorpus, device: torch.device) -> dict:
    """Dev scores of the punctuation head (overall and macro F1, per class), and the case head's."""
    ref, post = corpus_predictions(model, corpus, device)
    ref, post = ref[corpus.scored], post[corpus.scored]  # the words scored under corpus.first_word
    sizes = model.config.head_sizes
    scores = score(ref, post[:, : sizes["punct"]].argmax(axis=1), corpus.classes)
    record = {
        "overall_f1": scores.overall["f1"],
        "macro_f1": scores.macro_f1,
        "per_class_f1": {c: scores.per_class[c]["f1"] for c in corpus.classes[1:]},
    }
    if "case" in sizes and corpus.case_classes is not None:
        case = score(corpus.case_labels[corpus.scored], post[:, sizes["punct"] :].argmax(axis=1), corpus.case_classes)
        record["case_per_class_f1"] = {c: case.per_class[c]["f1"] for c in corpus.case_classes[1:]}
    return record


def build_criteria(cfg: TrainTdnnConfig, corpus: FusionCorpus, device: torch.device) -> dict[str, nn.Module]:
    """Cross-entropy per head.  The utterance mode weights the classes of every head (``class_weights``,
    capped by ``max_class_weight``); the window mode balances punctuation by oversampling and leaves the
    case head unweighted (an example has one sampling weight)."""
    counts = {"punct": corpus.class_counts()}
    if cfg.model.case_classes:
        if corpus.case_classes is None:
            raise ValueError("the TDNN has a case head but the corpus has no case labels (FusionCorpus case_classes)")
        if len(corpus.case_classes) != cfg.model.case_classes:
            raise ValueError(
                f"case head of {cfg.model.case_classes} classes, corpus case classes {corpus.case_classes}"
            )
        counts["case"] = corpus.case_counts()
    if len(corpus.classes) != cfg.model.num_classes:
        raise ValueError(f"punctuation head of {cfg.model.num_classes} classes, corpus classes {corpus.classes}")
    criteria = {}
    for head, head_counts in counts.items():
        weight = class_weights(cfg, head_counts).to(device) if cfg.example_unit == "utterance" else None
        criteria[head] = nn.CrossEntropyLoss(weight=weight, reduction=cfg.loss_reduction)
    return criteria


def tdnn_loss(
    logits: torch.Tensor, labels: torch.Tensor, criteria: Mapping[str, nn.Module], cfg: TrainTdnnConfig
) -> torch.Tensor:
    """Loss of (N, num_outputs) logits against (N,) punctuation labels or (N, 2) [punctuation, case] labels."""
    if not cfg.model.case_classes:
        return criteria["punct"](logits, labels)
    heads = split_heads(logits, cfg.model)
    return (1.0 - cfg.case_weight) * criteria["punct"](heads["punct"], labels[:, 0]) + cfg.case_weight * criteria[
        "case"
    ](heads["case"], labels[:, 1])


def _check_corpora(cfg: TrainTdnnConfig, *corpora: FusionCorpus | None) -> None:
    """The splits were opened with the config's window centre and first-word rule."""
    for corpus in corpora:
        if corpus is not None and corpus.window_centre != cfg.model.window_centre:
            raise ValueError(
                f"the corpus centres windows by {corpus.window_centre!r}, the model config by "
                f"{cfg.model.window_centre!r}: open the splits with the config's window_centre"
            )
        if corpus is not None and corpus.first_word != cfg.first_word:
            raise ValueError(
                f"the corpus was opened with first_word {corpus.first_word!r}, the config says "
                f"{cfg.first_word!r}: open the splits with the config's first_word"
            )


def _resume(
    resume: Pathlike, model: PunctTdnn, optimizer: torch.optim.Optimizer, device: torch.device
) -> tuple[TrainState, dict[str, Any]]:
    """Loads model, optimizer and state of a checkpoint; returns the state and the checkpoint (whose RNG and
    GradScaler states are restored where the training starts)."""
    ckpt = load_checkpoint(resume, device)
    model.load_state_dict(ckpt["model"])
    if ckpt.get("optimizer"):
        optimizer.load_state_dict(ckpt["optimizer"])
    state = TrainState(**ckpt["state"])
    logging.info(
        "resumed from %s after epoch %d and %d batches of the next (best dev F1 %.4f at epoch %d)",
        resume,
        state.epoch,
        state.batches_done,
        state.best_f1,
        state.best_epoch,
    )
    return state, ckpt


def _log_model(cfg: TrainTdnnConfig, model: PunctTdnn, corpus: FusionCorpus) -> None:
    logging.info(
        "TDNN: %d parameters, input %d = text %d + acoustic %d, window %d -> %d frames",
        count_parameters(model),
        corpus.input_dim,
        corpus.text_dim,
        corpus.acoustic_dim,
        cfg.model.window,
        model.config.output_frames,
    )
    logging.info("train words per class %s: %s", list(corpus.classes), corpus.class_counts().tolist())


def make_loader(
    cfg: TrainTdnnConfig, corpus: FusionCorpus, device: torch.device, seed: int, dist: DistInfo
) -> tuple[DataLoader, ShardedEpochs]:
    """This rank's training batches (windows or whole utterances, per ``cfg.example_unit``) and their dataset
    (``set_epoch``, ``skip``): each loader worker reads only its own utterances
    (:mod:`punct.models.punct_tdnn.reader`)."""
    # the loader's own generator: its worker seed is not drawn from torch's global RNG (dropout's), and the data
    # draw nothing from it (right truncation is a function of seed, epoch and example): punct.training.resume
    loader_args = dict(
        num_workers=cfg.num_workers, pin_memory=device.type == "cuda", generator=train_resume.loader_generator()
    )
    if cfg.num_workers > 0:
        loader_args.update(persistent_workers=True, prefetch_factor=cfg.prefetch_factor)
    if cfg.example_unit == "window":
        trained = corpus.trained_examples()  # every word, or all but each cut's first (first_word: exclude)
        items: Dataset = FusedWindowDataset(corpus, cfg.model.context, trained, cfg.truncation(), seed)
        planner = EpochPlanner(
            corpus.labels[trained],
            corpus.example_utt[trained],
            cfg.batch_size,
            cfg.balance,
            seed=seed,
            rank=dist.rank,
            world_size=dist.world_size,
            shuffle_buffer=cfg.shuffle_buffer,
            limit=cfg.epoch_limit,
            groups=corpus.example_utt[trained],
            group_size=cfg.group_utterances,
        )
        collate = default_collate
    else:
        num_utts = len(corpus.utterances)
        items = UtteranceDataset(corpus, cfg.truncation(), seed)
        planner = EpochPlanner(
            np.zeros(num_utts, dtype=np.int64),
            np.arange(num_utts),
            cfg.utterances_per_batch,
            "none",
            seed=seed,
            rank=dist.rank,
            world_size=dist.world_size,
            shuffle_buffer=cfg.shuffle_buffer,
            buffer_shuffle=False,
            limit=cfg.epoch_limit,
        )
        collate = functools.partial(collate_utterances, context=cfg.model.context)
    epochs = ShardedEpochs(items, corpus, planner, collate)
    return DataLoader(epochs, batch_size=None, **loader_args), epochs


def forward_batch(net: nn.Module, batch: Sequence[torch.Tensor], cfg: TrainTdnnConfig) -> torch.Tensor:
    """Logits of one training batch (windows, or whole utterances with their words' centre frames)."""
    if cfg.example_unit == "window":
        return net(batch[0])
    return net(batch[0], utterance=batch[1], centres=batch[2])


def batch_loss(net: nn.Module, batch: Sequence[torch.Tensor], criteria, cfg: TrainTdnnConfig, amp: Amp) -> torch.Tensor:
    """The training loss of one batch: the forward pass under ``amp``'s autocast, the loss on float32 logits."""
    with amp.autocast():
        logits = forward_batch(net, batch, cfg)
    return tdnn_loss(logits.float(), batch[-1], criteria, cfg)


def probe_loss(loader: DataLoader, criteria, cfg: TrainTdnnConfig, device: torch.device) -> LossOf:
    """The loss of the training set's first batches (``--amp fastest`` times their steps); read from the loader's
    dataset, so that the loader's sampler and workers are not touched."""
    epochs: ShardedEpochs = loader.dataset

    def first_batches() -> list[list[torch.Tensor]]:
        return [
            [t.to(device) for t in epochs.collate([epochs.items[i] for i in batch])]
            for batch in probe_index_batches(len(epochs.items), epochs.batch_size)
        ]

    return probe_loss_of(first_batches, lambda model, batch, amp: batch_loss(model, batch, criteria, cfg, amp))


def train_one_epoch(
    net: nn.Module,
    loader: DataLoader,
    optimizer: torch.optim.Optimizer,
    criteria,
    cfg: TrainTdnnConfig,
    state: TrainState,
    epoch: int,
    device: torch.device,
    dist: DistInfo,
    precision: Amp,
    progress: bool,
    kept: deque | None = None,
    curves: TrainingCurves = NO_CURVES,
    save_mid_epoch=None,
) -> dict:
    """One pass over ``loader``; returns the epoch's record (mean training loss per example, seconds).
    ``kept`` (a bounded deque) receives the batches as they are trained on: the last ones remain; ``curves`` the
    logged steps' losses; ``save_mid_epoch()`` (every rank calls it) writes a mid-epoch checkpoint every
    ``cfg.save_every_n_steps`` steps.

    A resumed epoch (``state.batches_done`` > 0) skips the batches done in the sampler (their examples are not
    read) and continues the sums of ``state.epoch_sums``; only those of them that ``kept`` would still hold at
    the epoch's end are read again, into ``kept`` (:func:`first_batch_read`)."""
    net.train()
    done = state.batches_done
    first = first_batch_read(done, len(loader), kept)
    loader.dataset.skip(first)
    start = time.time()
    total_loss, seen = float(state.epoch_sums.get("loss", 0.0)), int(state.epoch_sums.get("examples", 0))
    batches = progress_bar(
        loader, enabled=progress and dist.is_main, desc=f"epoch {epoch}", unit="batch", leave=False, initial=first
    )
    for i, batch in enumerate(batches, first + 1):
        batch = [t.to(device, non_blocking=True) for t in batch]
        if kept is not None:
            kept.append(batch)
        if i <= done:  # trained before the resume: read again for kept only
            continue
        labels = batch[-1]
        optimizer.zero_grad(set_to_none=True)
        loss = batch_loss(net, batch, criteria, cfg, precision)
        precision.step(loss, optimizer)
        state.step += 1
        trained = int((labels.reshape(len(labels), -1)[:, 0] != IGNORE_INDEX).sum())  # first words: ignored
        loss_per_example = loss.item() / (max(trained, 1) if cfg.loss_reduction == "sum" else 1)
        total_loss += loss_per_example * trained
        seen += trained
        if dist.is_main and cfg.log_interval and i % cfg.log_interval == 0:
            logging.info("epoch %d batch %d/%d: loss/example %.4f", epoch, i, len(loader), loss_per_example)
            curves.add_scalars({"train/loss_per_example": loss_per_example}, state.step)
        if save_mid_epoch is not None and train_resume.save_every(cfg.save_every_n_steps, state.step):
            state.batches_done, state.epoch_sums = i, {"loss": total_loss, "examples": seen}
            save_mid_epoch()
    state.batches_done, state.epoch_sums = 0, {}
    return {"epoch": epoch, "train_loss": total_loss / max(seen, 1), "seconds": round(time.time() - start, 1)}


def first_batch_read(done: int, num_batches: int, kept: deque | None) -> int:
    """The first batch a (resumed) epoch reads: ``done`` (the batches trained before the resume), or, where
    ``kept`` must end up holding the epoch's last ``kept.maxlen`` batches (all: None), the first of those."""
    if kept is None:
        return done
    last = num_batches - kept.maxlen if kept.maxlen is not None else 0
    return min(done, max(0, last))


def finish_epoch(
    record: dict,
    model: PunctTdnn,
    optimizer: torch.optim.Optimizer,
    state: TrainState,
    cfg: TrainTdnnConfig,
    dev_corpus: FusionCorpus | None,
    exp_dir: Path,
    device: torch.device,
    inputs: dict | None = None,
    curves: TrainingCurves = NO_CURVES,
    extra: dict[str, Any] | None = None,
) -> None:
    """Rank 0 after each epoch: dev scores, history (also to ``curves``), ``epoch-N.pt`` (with ``extra``:
    :func:`punct.training.resume.resume_extra`; the mid-epoch checkpoints it replaces removed), and
    ``best-valid-f1.pt`` when improved."""
    extra = extra or {}
    epoch = record["epoch"]
    if dev_corpus is not None:
        record.update(dev_overall_f1(model, dev_corpus, device))
    state.history.append(record)
    logging.info("epoch %d: %s", epoch, record)
    exp_dir.mkdir(parents=True, exist_ok=True)
    curves.end_epoch(state.history, state.step)
    save_checkpoint(exp_dir / f"epoch-{epoch}.pt", model, optimizer, state, cfg, inputs, **extra)
    train_resume.remove_mid_epoch_checkpoints(exp_dir)
    f1 = record.get(cfg.dev_metric, -record["train_loss"])
    if f1 > state.best_f1:
        state.best_f1, state.best_epoch = f1, epoch
        save_checkpoint(exp_dir / f"epoch-{epoch}.pt", model, optimizer, state, cfg, inputs, **extra)
        with atomic_path(exp_dir / "best-valid-f1.pt", suffix=".pt") as tmp:
            shutil.copyfile(exp_dir / f"epoch-{epoch}.pt", tmp)
        logging.info("epoch %d is the best so far (dev %s %.4f)", epoch, cfg.dev_metric, f1)


def train_tdnn(
    cfg: TrainTdnnConfig,
    train_corpus: FusionCorpus,
    dev_corpus: FusionCorpus | None,
    exp_dir: Pathlike,
    device: torch.device,
    seed: int = 42,
    resume: Pathlike | None = None,
    dist: DistInfo = DistInfo(),
    progress: bool = True,
    amp: str = "none",
    inputs: dict | None = None,
) -> PunctTdnn:
    """Trains for ``cfg.epochs`` epochs; returns the (unwrapped) model as trained by the last epoch.

    Args:
      resume: a checkpoint to continue from (model, optimizer and state), or None.
      dist: this process's rank (rank 0 evaluates and writes checkpoints).
      amp: mixed precision of the training forward passes: none, bf16, fp16 (CUDA only), auto or fastest.
      inputs: what the corpora's matrices were made from, recorded in the checkpoints (``checkpoint_inputs``).
    """
    exp_dir = Path(exp_dir)
    check_amp(amp, device)
    _check_corpora(cfg, train_corpus, dev_corpus)
    seed_everything(seed, device.type)
    model = build_model(cfg, train_corpus.input_dim).to(device)
    optimizer = make_optimizer(cfg, model)
    state, resumed = _resume(resume, model, optimizer, device) if resume is not None else (TrainState(), None)
    if dist.is_main:
        _log_model(cfg, model, train_corpus)
    net: nn.Module = model
    if dist.world_size > 1:
        net = nn.parallel.DistributedDataParallel(model, device_ids=[device.index] if device.type == "cuda" else None)
    loader, sampler = make_loader(cfg, train_corpus, device, seed, dist)
    criteria = build_criteria(cfg, train_corpus, device)
    precision = training_amp(amp, device, model, probe_loss(loader, criteria, cfg, device), state=state)
    curves = curves_for(exp_dir, dist.is_main, state.step)
    train_resume.start_resumed(resumed, precision, dist)
    write = lambda path, extra: save_checkpoint(path, model, optimizer, state, cfg, inputs, **extra)  # noqa: E731
    saver = train_resume.mid_epoch_saver(exp_dir, state, precision, dist, write)
    for epoch in range(state.epoch + 1, cfg.epochs + 1):
        sampler.set_epoch(epoch)
        for group in optimizer.param_groups:
            group["lr"] = cfg.lr * cfg.lr_decay ** (epoch - 1)
        kept = _kept_batches(cfg, dist)
        record = train_one_epoch(
            net, loader, optimizer, criteria, cfg, state, epoch, device, dist, precision, progress, kept, curves, saver
        )
        _recompute_batch_norm(model, kept, record, cfg)
        state.epoch = epoch
        extra = train_resume.resume_extra(precision, dist)
        if dist.is_main:
            finish_epoch(record, model, optimizer, state, cfg, dev_corpus, exp_dir, device, inputs, curves, extra)
        if dist.world_size > 1:
            check_ranks_agree(model)
            torch.distributed.barrier()
    curves.close()
    return model


def _kept_batches(cfg: TrainTdnnConfig, dist: DistInfo) -> deque | None:
    """With ``batch_norm_stats: recompute`` on rank 0 (which evaluates and saves the model), the deque that keeps the
    epoch's last ``batch_norm_batches`` batches as they were trained on (read once; a resumed epoch reads those of
    them it skipped again: :func:`first_batch_read`); None otherwise."""
    if cfg.batch_norm_stats != "recompute" or not dist.is_main:
        return None
    return deque(maxlen=cfg.batch_norm_batches or None)


def _recompute_batch_norm(model: PunctTdnn, kept: deque | None, record: dict, cfg: TrainTdnnConfig) -> None:
    """BatchNorm statistics from the ``kept`` batches (none: nothing to do), their time into ``record``."""
    if kept is None:
        return
    start = time.time()
    recompute_batch_norm_stats(model, kept, lambda m, batch: forward_batch(m, batch, cfg))
    record["batch_norm_seconds"] = round(time.time() - start, 1)
    kept.clear()


def class_weights(cfg: TrainTdnnConfig, counts: FusionCorpus | np.ndarray) -> torch.Tensor:
    """Loss weights of the utterance mode: (majority count / class count) ** ``class_weight_power``
    (power 1: the expected effect of oversampling to the majority count), capped at ``max_class_weight``;
    all ones for ``balance: none``; absent classes weigh 0.
    ``counts``: per-class counts, or a corpus (its punctuation counts)."""
    if isinstance(counts, FusionCorpus):
        counts = counts.class_counts()
    if cfg.balance == "none":
        return torch.ones(len(counts), dtype=torch.float32)
    return inverse_frequency_weights(counts, cfg.class_weight_power, cfg.max_class_weight)


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
