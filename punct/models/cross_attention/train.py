"""Training, selection and decoding of the punctuation + case models (``punct.bin.train_mm``):
the text-only baseline and the cross-attention model.

* loss: ``punct_weight * Lp + case_weight * Lc`` (thesis: 0.5 / 0.5), each a cross-entropy
  averaged over the labelled words of the batch (``first_word: exclude``: every word but each
  segment's first, whose labels the dataset marks ignored; see :mod:`punct.labels`); with
  ``punct_class_weight_power`` > 0, Lp is class-weighted (:func:`punct_class_weights`);
* learning rate: linear warm-up over the first ``warmup_fraction`` of the updates to the peak,
  then linear decay to zero (thesis 5.1);
* dev scores and decoding: :func:`punct.models.cross_attention.predictions.predict` (with ``first_word: exclude``
  the first word's predictions are its reference labels, and dev scores leave it out), and the
  cross-attention of the highest-loss segment of each length quartile (thesis 5.5.3) for the plots;
* shuffled batches are this rank's share under torchrun (:func:`punct.models.cross_attention.data.loader`);
* the model files it writes: :mod:`punct.models.cross_attention.checkpoint`;
* :func:`run_training`: the whole stage (train, keep the best epoch by ``dev_metric`` or the average of the last
  ``average_epochs`` epochs, decode).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import numpy as np
import torch
import torch.nn.functional as F

from punct.labels import CASE, IGNORE_INDEX, PUNCT9, first_scored
from punct.models.cross_attention.checkpoint import save_model
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import ItnDataset, collate, load_split, loader, to_device
from punct.models.cross_attention.model import CASE_HEAD, PUNCT_HEAD, build_model, new_parameters
from punct.models.cross_attention.predictions import predict
from punct.models.text.model import encoder_spec
from punct.training import checkpoint
from punct.training.checkpoint import load_checkpoint, set_rng_state
from punct.training.class_weights import inverse_frequency_weights
from punct.training.curves import NO_CURVES, TrainingCurves, curves_for
from punct.training.loop import (
    NO_AMP,
    Amp,
    DistInfo,
    TrainState,
    latest_checkpoint,
    prune_checkpoints,
    seed_everything,
    setup_distributed,
    wrap_ddp,
)
from punct.training.optim import fused_adam_flag, lr_factor
from punct.training.precision import LossOf, check_amp, probe_index_batches, probe_loss_of, training_amp
from punct.utils.atomic import atomic_write_text, mark_done
from punct.utils.config import save_config
from punct.utils.progress import progress as progress_bar

# (supervisions, recordings) manifest paths of a split
SplitPaths = tuple[Path, Path]
# a split's paths -> the scp of its dumped AM frames (punct.bin.dump_am_frames)
AmFramesDump = Mapping[SplitPaths, Path]


def two_head_loss(
    logits: dict[str, torch.Tensor],
    batch: dict[str, torch.Tensor],
    punct_weight: float = 0.5,
    case_weight: float = 0.5,
    punct_class_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``punct_weight * CE_punct + case_weight * CE_case`` over the labelled words; returns the
    loss and its parts as floats.  ``punct_class_weights``: CE_punct is the class-weighted mean
    (sum of w[label] * loss over sum of w[label])."""
    parts = {}
    for head in (PUNCT_HEAD, CASE_HEAD):
        labels = batch[f"labels_{head}"]
        mask = labels != IGNORE_INDEX
        weight = punct_class_weights if head == PUNCT_HEAD else None
        parts[head] = F.cross_entropy(logits[head][mask], labels[mask], weight=weight)
    loss = punct_weight * parts[PUNCT_HEAD] + case_weight * parts[CASE_HEAD]
    return loss, {k: float(v.detach()) for k, v in parts.items()}


def schedule_factor(step: int, total_steps: int, warmup_fraction: float) -> float:
    """Linear warm-up to 1 over ``warmup_fraction * total_steps`` updates, then linear decay to 0."""
    return lr_factor(step, max(1, int(round(warmup_fraction * total_steps))), total_steps)


def build_optimizer(model: torch.nn.Module, cfg: MmConfig) -> torch.optim.Optimizer:
    """AdamW with groups (pretrained/new x decay/no decay); each group's ``peak_lr`` is kept for the schedule.
    Fused where PyTorch has it (:func:`punct.training.optim.fused_adam_flag`): the per-tensor loop was 11 % of a
    bf16 multimodal step on the small ParCzech corpus."""
    new_ids = {id(p) for p in new_parameters(model)}
    groups: dict[tuple[bool, bool], list] = {}
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        no_decay = p.ndim < 2 or "norm" in name.lower()
        groups.setdefault((id(p) in new_ids, no_decay), []).append(p)
    param_groups = []
    for (is_new, no_decay), params in groups.items():
        peak = cfg.lr_new if (is_new and cfg.lr_new > 0) else cfg.lr
        param_groups.append(
            {"params": params, "weight_decay": 0.0 if no_decay else cfg.weight_decay, "lr": peak, "peak_lr": peak}
        )
    return torch.optim.AdamW(param_groups, fused=fused_adam_flag(p for group in param_groups for p in group["params"]))


def quartile_worst(dataset: ItnDataset, losses: list[float]) -> list[int]:
    """Index of the highest-loss segment in each quartile of word counts (thesis 5.5.3)."""
    order = sorted(range(len(dataset)), key=lambda i: (len(dataset.segments[i].words), dataset.segments[i].id))
    chosen = []
    for q in range(4):
        part = order[q * len(order) // 4 : (q + 1) * len(order) // 4]
        if part:
            chosen.append(max(part, key=lambda i: losses[i]))
    return chosen


@torch.no_grad()
def attention_examples(
    model: torch.nn.Module, dataset: ItnDataset, indices: list[int], device: torch.device, pad_id: int, tokenizer
) -> list[dict]:
    """The last block's cross-attention (text tokens x audio frames) of some segments, for plots."""
    if not getattr(model, "uses_audio", False):
        return []
    model.eval()
    out = []
    for i in indices:
        example = dataset[i]
        batch = to_device(collate([example], pad_id), device)
        attn = model(batch, need_attention=True)["attention"][0]  # (T, F)
        seg = dataset.segments[i]
        ids, _, token_words = dataset.text[i]
        num_frames = len(example["frame_words"])
        starts, _ = dataset.geometry.frame_windows(num_frames)
        out.append(
            {
                "id": seg.id,
                "tokens": tokenizer.convert_ids_to_tokens(ids),
                "token_words": token_words,
                "words": seg.words,
                "punct": [PUNCT9.classes[x] for x in seg.punct],
                "case": [CASE.classes[x] for x in seg.case],
                "word_starts": seg.word_starts,
                "frame_starts": starts.tolist(),
                "frame_words": example["frame_words"].tolist(),
                "attention": attn[:, :num_frames].cpu().numpy().tolist(),
            }
        )
    return out


def checkpoint_path(exp_dir: Path, epoch: int) -> Path:
    return exp_dir / f"epoch-{epoch}.pt"


def sync(dist: DistInfo) -> None:
    """Waits for all ranks (no-op in one process)."""
    if dist.world_size > 1:
        torch.distributed.barrier()


def punct_class_weights(train: ItnDataset, cfg: MmConfig) -> torch.Tensor | None:
    """The punctuation loss' class weights from the training words' marks (each segment's first word left
    out under ``first_word: exclude``), or None for ``punct_class_weight_power`` 0."""
    if cfg.punct_class_weight_power == 0:
        return None
    first = first_scored(cfg.first_word)
    counts = np.bincount([x for seg in train.segments for x in seg.punct[first:]], minlength=len(PUNCT9.classes))
    weights = inverse_frequency_weights(counts, cfg.punct_class_weight_power, cfg.max_class_weight)
    logging.info(
        "punctuation class weights (power %g, cap %g): %s",
        cfg.punct_class_weight_power,
        cfg.max_class_weight,
        ", ".join(f"{c!r} {n} words -> {w:.2f}" for c, n, w in zip(PUNCT9.classes, counts, weights.tolist())),
    )
    return weights


def batch_loss(
    model, batch: dict[str, torch.Tensor], cfg: MmConfig, amp: Amp, punct_weights: torch.Tensor | None = None
) -> tuple[torch.Tensor, dict[str, float]]:
    """The training loss of one batch and its two heads' parts: the model under ``amp``'s autocast, the losses on
    float32 logits."""
    with amp.autocast():
        logits = model(batch)
    logits = {name: x.float() for name, x in logits.items()}
    return two_head_loss(logits, batch, cfg.punct_weight, cfg.case_weight, punct_weights)


def probe_loss(
    train: ItnDataset, cfg: MmConfig, pad_id: int, device: torch.device, punct_weights: torch.Tensor | None
) -> LossOf:
    """The loss of the first batches of ``batch_size`` training segments (``--amp fastest`` times their steps)."""

    def first_batches() -> list[dict]:
        return [
            to_device(collate([train[i] for i in batch], pad_id), device)
            for batch in probe_index_batches(len(train), cfg.batch_size)
        ]

    return probe_loss_of(
        first_batches,
        lambda model, batch, amp: batch_loss(model, batch, cfg, amp, punct_weights)[0],
    )


def words_per_batch(train: ItnDataset, cfg: MmConfig, batches_per_rank: int, world_size: int = 1) -> float:
    """The mean number of trained words in one rank's batch of an epoch.  Under ``batching: length`` each batch's
    loss (a mean over its words) is weighed by its words over this mean: like-length batches of short segments hold
    few words, and unweighed each of their words would count for more than one of a long segment's, which random
    batches (all of about the mean size) do not do."""
    first = first_scored(cfg.first_word)
    words = sum(max(len(seg.punct) - first, 0) for seg in train.segments)
    return words / max(batches_per_rank * world_size, 1)


def train_one_epoch(
    model,
    optimizer,
    train_loader,
    cfg: MmConfig,
    state: TrainState,
    total_steps: int,
    device: torch.device,
    amp: Amp = NO_AMP,
    progress: bool = True,
    punct_weights: torch.Tensor | None = None,
    curves: TrainingCurves = NO_CURVES,
    mean_batch_words: float = 0.0,
) -> dict[str, float]:
    """One pass over (this rank's share of) the training set; returns the mean losses (the logged steps' also to
    ``curves``).  The model runs under ``amp``'s autocast, the losses on float32 logits (``punct_weights``: the
    punctuation classes').  ``mean_batch_words`` > 0 (:func:`words_per_batch`): each step's loss is weighed by its
    batch's trained words over it (the logged losses are not)."""
    model.train()
    sums = {"loss": 0.0, "punct": 0.0, "case": 0.0}
    count = 0
    epoch = state.epoch + 1
    for i, batch in enumerate(progress_bar(train_loader, enabled=progress, desc=f"epoch {epoch}", mininterval=10)):
        batch = to_device(batch, device)
        factor = schedule_factor(state.step, total_steps, cfg.warmup_fraction)
        for group in optimizer.param_groups:
            group["lr"] = group["peak_lr"] * factor
        loss, parts = batch_loss(model, batch, cfg, amp, punct_weights)
        step_loss = loss
        if mean_batch_words > 0:
            trained_words = int((batch[f"labels_{PUNCT_HEAD}"] != IGNORE_INDEX).sum())
            step_loss = loss * (trained_words / mean_batch_words)
        optimizer.zero_grad(set_to_none=True)
        amp.step(step_loss, optimizer, model.parameters(), cfg.grad_clip)
        state.step += 1
        count += 1
        sums["loss"] += float(loss.detach())
        for k, v in parts.items():
            sums[k] += v
        if (i + 1) % cfg.log_interval == 0:
            logging.info(
                "epoch %d batch %d: loss %.4f (punct %.4f, case %.4f), lr factor %.3f",
                epoch,
                i + 1,
                float(loss.detach()),
                parts["punct"],
                parts["case"],
                factor,
            )
            logged = {"train/loss": float(loss.detach()), "train/punct": parts["punct"], "train/case": parts["case"]}
            curves.add_scalars({**logged, "train/lr_factor": factor}, state.step)
    return {k: v / max(count, 1) for k, v in sums.items()}


def resume(exp_dir: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer, device: torch.device) -> TrainState:
    """Model, optimizer, training state and random state from the newest epoch-N.pt (a new state if none)."""
    ckpt = latest_checkpoint(exp_dir)
    if ckpt is None:
        logging.info("--resume: no epoch-N.pt in %s; starting from scratch", exp_dir)
        return TrainState()
    saved = load_checkpoint(ckpt, device, legacy_numpy_rng=True)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    state = TrainState(**saved["state"])
    set_rng_state(saved["rng"])
    logging.info("resumed from %s (epoch %d, best dev epoch so far %d)", ckpt, state.epoch, state.best_epoch)
    return state


def score_dev(
    model: torch.nn.Module,
    dev,
    cfg: MmConfig,
    state: TrainState,
    losses: dict[str, float],
    device: torch.device,
    pad_id: int,
    seconds: float,
) -> dict | None:
    """Dev scores of the epoch just trained into ``state.history``; when it is the best so far by
    ``cfg.dev_metric`` (:func:`selection_score`), the epoch becomes ``state.best_epoch`` and its punctuation and
    case scores are returned."""
    preds = predict(model, dev, cfg, device, pad_id)
    p_scores, c_scores = preds.scores()
    f1 = p_scores.macro_f1
    record = {
        "epoch": state.epoch,
        "step": state.step,
        **{f"train_{k}": v for k, v in losses.items()},
        "dev_loss": float(np.mean(preds.losses)),
        "dev_macro_f1": f1,
        "dev_cap_f1": c_scores.per_class["cap"]["f1"],
        **{f"dev_f1_{c}": p_scores.per_class[c]["f1"] for c in PUNCT9.classes[1:]},
    }
    state.history.append(record)
    logging.info(
        "epoch %d: train loss %.4f, dev loss %.4f, dev macro F1 %.4f, [cap] F1 %.4f (%s), %.0f s",
        state.epoch,
        losses["loss"],
        record["dev_loss"],
        f1,
        record["dev_cap_f1"],
        ", ".join(f"{c} {p_scores.per_class[c]['f1']:.3f}" for c in PUNCT9.classes[1:]),
        seconds,
    )
    score = selection_score(record, cfg)
    if state.best_epoch == 0 or score > state.best_f1:
        state.best_f1, state.best_epoch = score, state.epoch
        return {"dev_punct": p_scores.to_dict(), "dev_case": c_scores.to_dict()}
    return None


def selection_score(record: dict, cfg: MmConfig) -> float:
    """An epoch's dev score for checkpoint selection, higher is better: the macro F1, minus the dev loss, or
    (``dev_metric: last``) the epoch number, so that every epoch replaces the one before."""
    if cfg.dev_metric == "last":
        return float(record["epoch"])
    return record["dev_macro_f1"] if cfg.dev_metric == "macro_f1" else -record["dev_loss"]


def describe_best(state: TrainState, cfg: MmConfig) -> str:
    if cfg.average_epochs > 1:
        first, last = averaged_epochs(state.epoch, cfg)
        return f"the average of epochs {first}-{last}"
    if cfg.dev_metric == "last":
        return f"the last epoch, {state.best_epoch}"
    value = state.best_f1 if cfg.dev_metric == "macro_f1" else -state.best_f1
    return f"best dev {cfg.dev_metric.replace('_', ' ')} {value:.4f} at epoch {state.best_epoch}"


def save_best(exp_dir: Path, model: torch.nn.Module, kind: str, cfg: MmConfig, state: TrainState, scores: dict) -> None:
    save_model(exp_dir / "best-valid-f1.pt", model, kind, cfg, epoch=state.epoch)
    atomic_write_text(exp_dir / "best-valid-f1.json", json.dumps({"epoch": state.epoch, **scores}, indent=2) + "\n")
    logging.info("new %s: saved %s", describe_best(state, cfg), exp_dir / "best-valid-f1.pt")


def averaged_epochs(last_epoch: int, cfg: MmConfig) -> tuple[int, int]:
    """First and last epoch of the average that ``average_epochs`` > 1 makes after epoch ``last_epoch``."""
    return max(1, last_epoch - cfg.average_epochs + 1), last_epoch


def save_average(
    exp_dir: Path,
    model: torch.nn.Module,
    kind: str,
    cfg: MmConfig,
    state: TrainState,
    dev,
    device: torch.device,
    pad_id: int,
) -> None:
    """Loads the average of the last ``cfg.average_epochs`` epochs' weights into ``model`` and saves it as
    ``best-valid-f1.pt``, with its dev scores in ``best-valid-f1.json``, in place of the epoch that ``dev_metric``
    picks (conf/mm_small.yaml: what it gave on the small corpus)."""
    first, last = averaged_epochs(state.epoch, cfg)
    paths = [checkpoint_path(exp_dir, epoch) for epoch in range(first, last + 1)]
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"average_epochs {cfg.average_epochs}: missing {', '.join(missing)}")
    model.load_state_dict(checkpoint.average_state_dicts([load_checkpoint(path, device)["model"] for path in paths]))
    preds = predict(model, dev, cfg, device, pad_id)
    p_scores, c_scores = preds.scores()
    save_model(exp_dir / "best-valid-f1.pt", model, kind, cfg, epoch=last, averaged_epochs=[first, last])
    record = {
        "epoch": last,
        "averaged_epochs": [first, last],
        "dev_loss": float(np.mean(preds.losses)),
        "dev_punct": p_scores.to_dict(),
        "dev_case": c_scores.to_dict(),
    }
    atomic_write_text(exp_dir / "best-valid-f1.json", json.dumps(record, indent=2) + "\n")
    logging.info(
        "%s: dev loss %.4f, dev macro F1 %.4f, [cap] F1 %.4f -> %s",
        describe_best(state, cfg),
        record["dev_loss"],
        p_scores.macro_f1,
        c_scores.per_class["cap"]["f1"],
        exp_dir / "best-valid-f1.pt",
    )


def decode(
    model: torch.nn.Module,
    data,
    split: str,
    out_dir: Path,
    cfg: MmConfig,
    device: torch.device,
    pad_id: int,
    selected: str,
) -> None:
    """Predictions of ``split`` to out_dir/<split>.jsonl, and cross-attention maps of hard segments.
    ``selected``: which model decodes, for the log."""
    preds = predict(model, data, cfg, device, pad_id)
    preds.write(out_dir / f"{split}.jsonl")
    p_scores, c_scores = preds.scores()
    logging.info(
        "%s (%s): macro F1 %.4f, overall F1 %.4f, [cap] F1 %.4f",
        split,
        selected,
        p_scores.macro_f1,
        p_scores.overall["f1"],
        c_scores.per_class["cap"]["f1"],
    )
    tokenizer = model.text.tokenizer
    examples = attention_examples(model, data, quartile_worst(data, preds.losses), device, pad_id, tokenizer)
    if examples:
        atomic_write_text(out_dir / f"{split}.attention.json", json.dumps(examples, ensure_ascii=False) + "\n")


def _log_model(model: torch.nn.Module, kind: str) -> None:
    num_params = sum(p.numel() for p in model.parameters())
    text_params = sum(p.numel() for p in model.text.encoder.parameters())
    logging.info(
        "model %s: %.2f M parameters (text encoder %.2f M, the rest %.2f M)",
        kind,
        num_params / 1e6,
        text_params / 1e6,
        (num_params - text_params) / 1e6,
    )


def save_epoch(
    exp_dir: Path, model: torch.nn.Module, kind: str, cfg: MmConfig, optimizer: torch.optim.Optimizer, state: TrainState
) -> None:
    """``epoch-N.pt``: what a resumed run needs (model, optimiser, state and RNG states), and the
    ``text_encoder`` of :func:`punct.models.cross_attention.checkpoint.save_model`."""
    checkpoint.save_checkpoint(
        checkpoint_path(exp_dir, state.epoch),
        model=model,
        optimizer=optimizer,
        state=state,
        config=cfg,
        kind=kind,
        text_encoder=encoder_spec(model.text),
    )
    keep = cfg.keep_last_epochs if cfg.keep_last_epochs <= 0 else max(cfg.keep_last_epochs, cfg.average_epochs)
    prune_checkpoints(exp_dir, keep, state.epoch)


def with_absolute_am_dir(cfg: MmConfig, kind: str) -> MmConfig:
    """``cfg`` with the AM folder of ``sound_encoder: am`` as an absolute path: the config of every checkpoint
    then names the AM whose frames the model was trained on, for decoding from any folder."""
    if kind != "mm" or cfg.sound_encoder != "am":
        return cfg
    if not cfg.am_dir:
        raise ValueError("sound_encoder am needs am_dir: the AM folder (the recipe's exp/am, or train_mm --am-dir)")
    return dataclasses.replace(cfg, am_dir=str(Path(cfg.am_dir).resolve()))


def model_on(kind: str, cfg: MmConfig, device: torch.device) -> tuple[torch.nn.Module, int]:
    """A fresh model ``kind`` on ``device`` (its size logged) and its tokenizer's padding id."""
    model = build_model(kind, cfg)
    tokenizer = model.text.tokenizer
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    _log_model(model, kind)
    model.to(device)
    return model, pad_id


def load_data(
    model: torch.nn.Module, cfg: MmConfig, paths: SplitPaths, am_frames: AmFramesDump, max_segments: int = 0
) -> ItnDataset:
    """A split tokenised for ``model``, with audio when it uses audio; the AM frames from ``am_frames[paths]``
    (a dump's scp, of the model's own audio: real or its random audio) where the model reads the frozen AM's frames."""
    data = load_split(*paths, model.text.tokenizer, cfg, model.uses_audio, max_segments)
    if paths in am_frames and data.am_frames is not None:
        data.take_am_frames(am_frames[paths])
    return data


def load_train_dev(
    model: torch.nn.Module,
    cfg: MmConfig,
    train_paths: SplitPaths,
    dev_paths: SplitPaths,
    with_dev: bool,
    am_frames: AmFramesDump = MappingProxyType({}),
) -> tuple[ItnDataset, ItnDataset | None]:
    """The training split (a sample of ``cfg.max_train_segments`` when set) and, ``with_dev`` (rank 0), the dev
    split (:func:`load_data`)."""
    train = load_data(model, cfg, train_paths, am_frames, cfg.max_train_segments)
    dev = load_data(model, cfg, dev_paths, am_frames) if with_dev else None
    if not len(train):
        raise ValueError(f"{train_paths[0]}: no training segments")
    return train, dev


def epoch_loader(
    train: ItnDataset, cfg: MmConfig, epoch: int, pad_id: int, dist: DistInfo, pin: bool
) -> torch.utils.data.DataLoader:
    """This rank's batches of epoch ``epoch`` (0-based): a new, seeded order each epoch (also after --resume),
    grouped by length under ``batching: length``."""
    by_length = cfg.batching == "length"
    return loader(
        train,
        cfg.batch_size,
        True,
        cfg.seed + epoch,
        pad_id,
        cfg.num_workers,
        dist=dist,
        pin_memory=pin,
        by_length=by_length,
        length_group=cfg.length_group,
    )


def end_epoch(
    exp_dir: Path,
    model: torch.nn.Module,
    kind: str,
    cfg: MmConfig,
    optimizer: torch.optim.Optimizer,
    state: TrainState,
    dev,
    losses: dict[str, float],
    device: torch.device,
    pad_id: int,
    seconds: float,
    curves: TrainingCurves = NO_CURVES,
) -> None:
    """Rank 0 after an epoch: dev scores (also to ``curves``), best-valid-f1.pt when the epoch is the best (unless
    the last epochs are averaged) and epoch-N.pt."""
    new_best = score_dev(model, dev, cfg, state, losses, device, pad_id, seconds)
    curves.end_epoch(state.history, state.step)
    if new_best is not None and cfg.average_epochs == 1:
        save_best(exp_dir, model, kind, cfg, state, new_best)
    save_epoch(exp_dir, model, kind, cfg, optimizer, state)


def run_training(
    kind: str,
    cfg: MmConfig,
    *,
    train_paths: SplitPaths,
    dev_paths: SplitPaths,
    decode_paths: dict[str, SplitPaths],
    exp_dir: Path,
    resume_run: bool = False,
    device_name: str = "auto",
    amp: str = "none",
    am_frames: AmFramesDump = MappingProxyType({}),
) -> None:
    """The whole stage: trains model ``kind`` (text or mm), keeps the best epoch by ``cfg.dev_metric`` or the average of
    the last ``cfg.average_epochs`` (rank 0), then decodes the splits of ``decode_paths`` with it (the dev split's data
    is reused when it is among them).  ``am_frames``: split paths -> scp of their dumped AM frames."""
    if cfg.num_threads > 0:
        torch.set_num_threads(cfg.num_threads)
    dist, device = setup_distributed(device_name)
    check_amp(amp, device)
    pin = device.type == "cuda"
    seed_everything(cfg.seed, device.type)
    cfg = with_absolute_am_dir(cfg, kind)
    if dist.is_main:
        save_config(cfg, exp_dir / "config.yaml")

    model, pad_id = model_on(kind, cfg, device)
    train, dev = load_train_dev(model, cfg, train_paths, dev_paths, dist.is_main, am_frames)
    batches_per_epoch = len(epoch_loader(train, cfg, 0, pad_id, dist, pin))
    total_steps = cfg.num_epochs * batches_per_epoch
    words = words_per_batch(train, cfg, batches_per_epoch, dist.world_size) if cfg.batching == "length" else 0.0
    optimizer = build_optimizer(model, cfg)
    weights = punct_class_weights(train, cfg)
    weights = weights.to(device) if weights is not None else None
    state = resume(exp_dir, model, optimizer, device) if resume_run else TrainState()
    precision = training_amp(amp, device, model, probe_loss(train, cfg, pad_id, device, weights), state=state)

    # parameters outside the loss (the text encoder's pooler): DDP must not wait for their gradients
    net = wrap_ddp(model, device, dist, find_unused_parameters=True)
    curves = curves_for(exp_dir, dist.is_main, state.step)
    while state.epoch < cfg.num_epochs:
        t0 = time.time()
        batches = epoch_loader(train, cfg, state.epoch, pad_id, dist, pin)
        losses = train_one_epoch(
            net, optimizer, batches, cfg, state, total_steps, device, precision, dist.is_main, weights, curves, words
        )
        state.epoch += 1
        if not dist.is_main:
            sync(dist)  # while rank 0 scores dev and writes the checkpoints
            continue
        end_epoch(exp_dir, model, kind, cfg, optimizer, state, dev, losses, device, pad_id, time.time() - t0, curves)
        sync(dist)
    curves.close()
    if dist.world_size > 1:
        torch.distributed.destroy_process_group()
    if dist.is_main:
        if cfg.average_epochs > 1:
            save_average(exp_dir, model, kind, cfg, state, dev, device, pad_id)
        decode_best(model, exp_dir, decode_paths, {dev_paths: dev}, cfg, state, device, pad_id, am_frames)


def decode_best(
    model: torch.nn.Module,
    exp_dir: Path,
    decode_paths: dict[str, SplitPaths],
    loaded: dict,
    cfg: MmConfig,
    state: TrainState,
    device: torch.device,
    pad_id: int,
    am_frames: AmFramesDump = MappingProxyType({}),
) -> None:
    """Rank 0 after training: ``history.json``, the best model's decodes of ``decode_paths``, ``.done``.
    ``loaded``: split paths -> data already loaded (the dev split)."""
    atomic_write_text(exp_dir / "history.json", json.dumps(state.history, indent=2) + "\n")
    best = load_checkpoint(exp_dir / "best-valid-f1.pt", device)
    model.load_state_dict(best["model"])
    for split, paths in decode_paths.items():
        data = loaded[paths] if paths in loaded else load_data(model, cfg, paths, am_frames)
        decode(model, data, split, exp_dir / "decode", cfg, device, pad_id, describe_best(state, cfg))
    logging.info("done: %s -> %s", describe_best(state, cfg), exp_dir / "best-valid-f1.pt")
    mark_done(exp_dir)
