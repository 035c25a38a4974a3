"""Fine-tuning a BERT-like encoder + EfficientPunct head for per-word punctuation (stage 5).

How ranks share the work under torchrun and which files land in ``<exp-dir>`` is told once, in the
``--help`` of the entry point that calls :func:`run_training`: :mod:`punct.bin.train_bert`.  A resume from an
``epoch-N.pt`` or a mid-epoch ``epoch-E-batch-B.pt`` (``save_every_n_steps``) trains the weights of the
uninterrupted run: :mod:`punct.training.resume`.
"""

from __future__ import annotations

import json
import logging
import random
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

import torch

from punct.labels import PUNCT4, class_index
from punct.models.text.config import BertTrainConfig
from punct.models.text.data import Example, Utterance, make_examples, read_extra_text, read_utterances
from punct.models.text.infer import predict_words
from punct.models.text.losses import build_loss
from punct.models.text.model import HeadSpec, PunctBert, collate_chunks
from punct.models.text.packing import first_position, pack_chunks
from punct.models.text.truncation import training_examples
from punct.scoring.punct_scores import score
from punct.text.normalize import NormalizeConfig
from punct.training import checkpoint
from punct.training import resume as train_resume
from punct.training.checkpoint import load_checkpoint
from punct.training.curves import NO_CURVES, TrainingCurves, curves_for
from punct.training.loop import (
    NO_AMP,
    Amp,
    DistInfo,
    TrainState,
    like_length_batches,
    prune_checkpoints,
    rank_batches,
    seed_everything,
    setup_distributed,
    unwrap,
    wrap_ddp,
)
from punct.training.optim import fused_adam_flag, lr_factor
from punct.training.precision import LossOf, check_amp, probe_index_batches, probe_loss_of, training_amp
from punct.utils.atomic import atomic_write_text, mark_done
from punct.utils.config import save_config
from punct.utils.progress import progress

HEAD = "punct"  # one head over PUNCT4.classes
T = TypeVar("T")
# Config values that may change when a run is resumed (they do not change what was learned).
RESUMABLE_CHANGES = {
    "num_epochs",
    "log_interval",
    "num_threads",
    "eval_batch_size",
    "keep_last_epochs",
    "save_every_n_steps",
}


def build_optimizer(model: torch.nn.Module, cfg: BertTrainConfig) -> torch.optim.Optimizer:
    """AdamW; no weight decay on biases and LayerNorm weights."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        (no_decay if p.ndim < 2 or "LayerNorm" in name or "layer_norm" in name else decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, fused=fused_adam_flag(decay + no_decay))


def learning_rate(cfg: BertTrainConfig, step: int, total_steps: int) -> float:
    """``cfg.lr`` after the linear warm-up; with ``lr_schedule: linear`` it then falls linearly to 0 at
    ``total_steps`` (all epochs' updates)."""
    return cfg.lr * lr_factor(step, cfg.warmup_steps, total_steps if cfg.lr_schedule == "linear" else None)


def compute_loss(model: PunctBert, loss_fn, batch: dict, device: torch.device, amp: Amp = NO_AMP):
    """Mean over heads of the loss on the labelled words; returns (loss, number of words).  The encoder
    and heads run under ``amp``'s autocast, the losses (SCL's similarities, focal's powers) in float32.
    ``batch``: :func:`collate_examples`' padded batch or packed row; the words reach the losses in the same order."""
    with amp.autocast():
        if "packed" in batch:
            vectors, logits = model(packed=batch["packed"].to(device))
        else:
            vectors, logits = model(
                batch["input_ids"].to(device), batch["attention_mask"].to(device), batch["word_positions"].to(device)
            )
    vectors, logits = vectors.float(), {name: x.float() for name, x in logits.items()}
    total, num_words = vectors.sum() * 0.0, 0  # stays attached to the graph if no head has labels
    for name, head_logits in logits.items():
        labels = batch[f"labels_{name}"].to(device)
        mask = labels != -100
        if not mask.any():  # no labelled word for this head in the batch
            continue
        total = total + loss_fn(head_logits[mask], labels[mask], vectors[mask])
        num_words = max(num_words, int(mask.sum()))
    return total / len(logits), num_words


def epoch_batches(
    examples: Sequence[T], batch_size: int, seed: int, dist: DistInfo, lengths: Sequence[int] | None = None
) -> list[list[T]]:
    """This rank's batches of one epoch: the shuffled order of ``batches(examples, batch_size, True, seed)``
    (the same on every rank) split by :func:`rank_batches`; one process gets exactly ``batches``'.  Given
    ``range(len(examples))``, the batches of the examples' indices.

    With the examples' ``lengths`` (``batching: length``) each global batch holds examples of like length:
    the shuffled order sorted by length (ties stay shuffled), cut into global batches, which are then
    shuffled.  A padded batch (an encoder that cannot be packed: :func:`collate_examples`) then computes, on the
    mini corpus' chunks of 11-86 tokens, 1.02 tokens per real one instead of 1.29."""
    rng = random.Random(seed)
    order = list(range(len(examples)))
    rng.shuffle(order)
    if lengths is None:
        return [[examples[j] for j in batch] for batch in rank_batches(order, batch_size, dist)]
    world = dist.world_size
    global_batches = like_length_batches(order, lengths, batch_size, world)
    rng.shuffle(global_batches)
    return [[examples[j] for j in batch[dist.rank :: world]] for batch in global_batches]


def pad_token_id(tokenizer) -> int:
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0


def collate_examples(examples: Sequence[Example], pad_id: int, first: int | None = None) -> dict:
    """One training batch of ``examples``: with ``first`` (the encoder's :func:`first_position`) the chunks
    packed into one row (``packed``) and the head's labels of its words, chunk by chunk (``labels_punct``:
    (words,)); with None padded token ids, word positions and labels (N, W), -100 at padding."""
    chunks = [(e.chunk.input_ids, e.chunk.word_positions) for e in examples]
    if first is None:
        return collate_chunks(chunks, pad_id, labels=[{HEAD: e.labels} for e in examples])
    labels = torch.tensor([label for e in examples for label in e.labels], dtype=torch.long)
    return {"packed": pack_chunks(chunks, first), f"labels_{HEAD}": labels}


def probe_loss(
    loss_fn, examples: Sequence[Example], pad_id: int, first: int | None, cfg: BertTrainConfig, device: torch.device
) -> LossOf:
    """The loss of the first batches of ``batch_size`` training examples, collated as training does (``--amp
    fastest`` times their steps)."""
    return probe_loss_of(
        lambda: [
            collate_examples([examples[i] for i in batch], pad_id, first)
            for batch in probe_index_batches(len(examples), cfg.batch_size)
        ],
        lambda model, batch, amp: compute_loss(model, loss_fn, batch, device, amp)[0],
    )


def train_one_epoch(
    model: torch.nn.Module,
    loss_fn,
    optimizer: torch.optim.Optimizer,
    examples: Sequence[Example],
    cfg: BertTrainConfig,
    state: TrainState,
    device: torch.device,
    dist: DistInfo = DistInfo(),
    amp: Amp = NO_AMP,
    curves: TrainingCurves = NO_CURVES,
    save_mid_epoch=None,
) -> float:
    """One pass over this rank's share of the shuffled training examples; returns its mean loss (the logged
    steps' also to ``curves``).  ``model``: a PunctBert, or a PunctBert in DistributedDataParallel.

    A resumed epoch (``state.batches_done`` > 0) skips the batches done (their indices; nothing is collated) and
    continues the sums of ``state.epoch_sums``; ``save_mid_epoch()`` (every rank calls it) writes a mid-epoch
    checkpoint every ``cfg.save_every_n_steps`` steps."""
    model.train()
    pad_id = pad_token_id(unwrap(model).tokenizer)
    first = first_position(unwrap(model).encoder)  # None: padded batches
    loss_sum, loss_count = float(state.epoch_sums.get("loss", 0.0)), int(state.epoch_sums.get("batches", 0))
    words, t0 = 0, time.time()
    epoch = state.epoch + 1
    lengths = [len(e.chunk.input_ids) for e in examples] if cfg.batching == "length" else None
    rank_share = epoch_batches(range(len(examples)), cfg.batch_size, cfg.seed + epoch, dist, lengths)
    num_batches = len(rank_share)
    truncation = cfg.truncation()
    done = state.batches_done
    bar = progress(rank_share[done:], enabled=dist.is_main, desc=f"epoch {epoch}", mininterval=10, initial=done)
    for i, batch_indices in enumerate(bar, start=done):
        batch_examples = training_examples(examples, batch_indices, truncation, cfg.seed, epoch)
        batch = collate_examples(batch_examples, pad_id, first)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(cfg, state.step, num_batches * cfg.num_epochs)
        loss, n = compute_loss(model, loss_fn, batch, device, amp)
        optimizer.zero_grad(set_to_none=True)
        amp.step(loss, optimizer, model.parameters(), cfg.grad_clip)
        state.step += 1
        loss_sum += loss.item()
        loss_count += 1
        words += n
        if (i + 1) % cfg.log_interval == 0:
            logging.info(
                "epoch %d batch %d/%d loss %.4f (running %.4f) %.0f words/s",
                epoch,
                i + 1,
                num_batches,
                loss.item(),
                loss_sum / loss_count,
                words / max(time.time() - t0, 1e-9),
            )
            curves.add_scalars({"train/loss": loss.item(), "train/lr": optimizer.param_groups[0]["lr"]}, state.step)
        if save_mid_epoch is not None and train_resume.save_every(cfg.save_every_n_steps, state.step):
            state.batches_done, state.epoch_sums = i + 1, {"loss": loss_sum, "batches": loss_count}
            save_mid_epoch()
    state.batches_done, state.epoch_sums = 0, {}
    return loss_sum / max(loss_count, 1)


def evaluate(model: PunctBert, utterances: Sequence[Utterance], cfg: BertTrainConfig, device: torch.device):
    """Dev scores of the punctuation head (every word predicted once)."""
    index = class_index(PUNCT4.classes)
    ref, hyp = [], []
    max_length = cfg.infer_max_length or cfg.max_length
    for utt, out in zip(
        utterances, predict_words(model, utterances, max_length, cfg.context, cfg.eval_batch_size, device)
    ):
        ref.extend(index[label] for label in utt.labels)
        hyp.extend(out.posteriors[HEAD].argmax(axis=1).tolist())
    return score(ref, hyp, PUNCT4.classes)


def checkpoint_path(exp_dir: Path, epoch: int) -> Path:
    return exp_dir / f"epoch-{epoch}.pt"


def save_checkpoint(
    path: Path, model: PunctBert, optimizer, state: TrainState, cfg: BertTrainConfig, **extra: Any
) -> None:
    """``epoch-N.pt`` or ``epoch-E-batch-B.pt``: the shared checkpoint format plus the heads' specs (and ``extra``:
    what a resume restores besides, :func:`punct.training.resume.resume_extra`)."""
    checkpoint.save_checkpoint(
        path,
        model=model,
        optimizer=optimizer,
        state=state,
        config=cfg,
        head_specs=[asdict(h) for h in unwrap(model).head_specs],
        **extra,
    )


def save_best(model: PunctBert, exp_dir: Path, state: TrainState, scores) -> None:
    """Replaces ``best-valid-f1/`` by the current model (written beside it, then renamed)."""
    final = exp_dir / "best-valid-f1"
    tmp = exp_dir / ".best-valid-f1.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    old = exp_dir / ".best-valid-f1.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    tmp.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    atomic_write_text(
        exp_dir / "best-valid-f1.json", json.dumps({"epoch": state.epoch, "dev": scores.to_dict()}, indent=2) + "\n"
    )


def load_training_utterances(train: Path, cfg: BertTrainConfig, norm: NormalizeConfig | None = None) -> list[Utterance]:
    """The training utterances (at most ``max_train_utts``, drawn with ``cfg.seed``) and the optional extra text,
    normalised with ``norm`` (the corpus' mark -> label mapping; None: the defaults)."""
    utterances = read_utterances(train)
    if cfg.max_train_utts and len(utterances) > cfg.max_train_utts:
        utterances = random.Random(cfg.seed).sample(utterances, cfg.max_train_utts)
    logging.info("%s: %d training utterances, %d words", train, len(utterances), sum(len(u.words) for u in utterances))
    if cfg.extra_text:
        extra = read_extra_text(cfg.extra_text, cfg.extra_text_words, cfg.extra_text_max_words, norm)
        counts = Counter(label for u in extra for label in u.labels)
        logging.info(
            "%s: %d extra pseudo-utterances, %d words, labels %s",
            cfg.extra_text,
            len(extra),
            sum(len(u.words) for u in extra),
            " ".join(f"{c}={counts[c]}" for c in PUNCT4.classes),
        )
        utterances = utterances + extra
    return utterances


def finish_epoch(
    model: PunctBert,
    optimizer: torch.optim.Optimizer,
    dev: Sequence[Utterance],
    cfg: BertTrainConfig,
    state: TrainState,
    exp_dir: Path,
    device: torch.device,
    train_loss: float,
    t0: float,
    extra: dict[str, Any] | None = None,
) -> None:
    """Rank 0 after each epoch: dev scores, history, ``best-valid-f1/`` when improved, ``epoch-N.pt`` (with
    ``extra``, :func:`punct.training.resume.resume_extra`; the mid-epoch checkpoints it replaces removed)."""
    scores = evaluate(model, dev, cfg, device)
    f1 = scores.overall["f1"]
    state.history.append(
        {
            "epoch": state.epoch,
            "train_loss": train_loss,
            "dev_f1": f1,
            **{f"dev_f1_{c}": scores.per_class[c]["f1"] for c in PUNCT4.classes[1:]},
        }
    )
    logging.info(
        "epoch %d: train loss %.4f, dev overall F1 %.4f (%s), %.0f s",
        state.epoch,
        train_loss,
        f1,
        ", ".join(f"{c} {scores.per_class[c]['f1']:.3f}" for c in PUNCT4.classes[1:]),
        time.time() - t0,
    )
    if f1 > state.best_f1:
        state.best_f1, state.best_epoch = f1, state.epoch
        save_best(model, exp_dir, state, scores)
        logging.info("new best dev F1 %.4f: saved %s", f1, exp_dir / "best-valid-f1")
    save_checkpoint(checkpoint_path(exp_dir, state.epoch), model, optimizer, state, cfg, **(extra or {}))
    train_resume.remove_mid_epoch_checkpoints(exp_dir)
    prune_checkpoints(exp_dir, cfg.keep_last_epochs, state.epoch)


def build_model(cfg: BertTrainConfig) -> PunctBert:
    """The encoder (``cfg.bert_model``) with one ``punct4`` head, chunking values stored on the model."""
    heads = [HeadSpec(HEAD, PUNCT4.classes, cfg.head_hidden, cfg.head_activation, cfg.head_dropout)]
    model = PunctBert.from_encoder(cfg.bert_model or None, heads)
    model.chunking = {"max_length": cfg.max_length, "context": cfg.context}
    if cfg.encoder_layers:
        model.keep_first_layers(cfg.encoder_layers)
    if cfg.freeze_layers or cfg.freeze_embeddings:
        frozen = model.freeze_lower_layers(cfg.freeze_layers)
        layers = f", layers 0-{cfg.freeze_layers - 1}" if cfg.freeze_layers else ""
        logging.info("frozen: embeddings%s (%.1f M parameters)", layers, frozen / 1e6)
    logging.info(
        "model: %s, %d layers, with %.1f M parameters (heads %.2f M)",
        type(model.encoder).__name__,
        model.encoder.config.num_hidden_layers,
        sum(p.numel() for p in model.parameters()) / 1e6,
        sum(p.numel() for p in model.heads.parameters()) / 1e6,
    )
    return model


def resume_from(
    ckpt: Path, model: PunctBert, optimizer: torch.optim.Optimizer, cfg: BertTrainConfig, device: torch.device
) -> tuple[TrainState, dict[str, Any]]:
    """Loads model and optimiser states of ``ckpt``; a config that changed what is learnt is an error.  Returns
    the state and the checkpoint, whose RNG and GradScaler states are restored where the training starts."""
    saved = load_checkpoint(ckpt, device, legacy_numpy_rng=True)
    defaults = asdict(BertTrainConfig())  # a checkpoint older than a field was trained with its default
    # num_epochs sets a linear schedule's slope: resuming with another would change the updates already made
    resumable = RESUMABLE_CHANGES - ({"num_epochs"} if cfg.lr_schedule == "linear" else set())
    changed = sorted(
        k for k, v in asdict(cfg).items() if k not in resumable and saved["config"].get(k, defaults[k]) != v
    )
    if changed:
        raise ValueError(
            f"{ckpt} was trained with other values of {changed}; "
            "start afresh (steps/train_bert.sh --overwrite true) or use another --exp-dir"
        )
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    state = TrainState(**saved["state"])
    logging.info(
        "resumed from %s (epoch %d done, %d batches of the next; best dev F1 %.4f at epoch %d)",
        ckpt,
        state.epoch,
        state.batches_done,
        state.best_f1,
        state.best_epoch,
    )
    return state, saved


def resume_latest(
    exp_dir: Path, model: PunctBert, optimizer: torch.optim.Optimizer, cfg: BertTrainConfig, device: torch.device
) -> tuple[TrainState, dict[str, Any] | None]:
    """:func:`resume_from` the newest checkpoint in ``exp_dir`` (:func:`punct.training.resume.newest_checkpoint`);
    a new state and None if there is none."""
    if (ckpt := train_resume.newest_checkpoint(exp_dir)) is not None:
        return resume_from(ckpt, model, optimizer, cfg, device)
    logging.info("--resume: no epoch-N.pt in %s; starting from scratch", exp_dir)
    return TrainState(), None


def load_train_dev(
    train: Path, dev: Path, cfg: BertTrainConfig, norm: NormalizeConfig | None, tokenizer
) -> tuple[list[Example], list[Utterance]]:
    """The training chunks (:func:`load_training_utterances`, tokenised) and the dev utterances."""
    train_examples = make_examples(
        load_training_utterances(train, cfg, norm), tokenizer, cfg.max_length, cfg.context, where=str(train)
    )
    dev_utterances = read_utterances(dev)
    logging.info("%d training chunks; %d dev utterances", len(train_examples), len(dev_utterances))
    if not train_examples:
        raise ValueError(f"{train}: no training words")
    return train_examples, dev_utterances


def write_history(exp_dir: Path, state: TrainState) -> None:
    """Rank 0 after training: history.json, and ``exp_dir`` marked done."""
    atomic_write_text(exp_dir / "history.json", json.dumps(state.history, indent=2) + "\n")
    logging.info(
        "done: best dev overall F1 %.4f at epoch %d -> %s", state.best_f1, state.best_epoch, exp_dir / "best-valid-f1"
    )
    mark_done(exp_dir)


def run_training(
    cfg: BertTrainConfig,
    *,
    train: Path,
    dev: Path,
    exp_dir: Path,
    resume: bool = False,
    device_name: str = "auto",
    amp: str = "none",
    norm: NormalizeConfig | None = None,
) -> None:
    """The whole stage: trains on ``train`` (supervisions), selects on ``dev``, writes ``exp_dir``.

    ``norm`` labels the extra text (``cfg.extra_text``); the supervisions carry their labels already."""
    build_loss(cfg.loss_config())  # unknown loss names fail before any work
    if cfg.num_threads > 0:
        torch.set_num_threads(cfg.num_threads)
    dist, device = setup_distributed(device_name)
    check_amp(amp, device)
    seed_everything(cfg.seed, device.type)
    if dist.is_main:
        save_config(cfg, exp_dir / "config.yaml")
    model = build_model(cfg)
    loss_fn = build_loss(cfg.loss_config())
    model.to(device)
    optimizer = build_optimizer(model, cfg)
    state, resumed = resume_latest(exp_dir, model, optimizer, cfg, device) if resume else (TrainState(), None)
    train_examples, dev_utterances = load_train_dev(train, dev, cfg, norm, model.tokenizer)
    first = first_position(model.encoder)
    probe = probe_loss(loss_fn, train_examples, pad_token_id(model.tokenizer), first, cfg, device)
    precision = training_amp(amp, device, model, probe, state=state)

    # the encoder's pooler is outside the loss: DDP must not wait for its gradients
    net = wrap_ddp(model, device, dist, find_unused_parameters=True)
    curves = curves_for(exp_dir, dist.is_main, state.step)
    train_resume.start_resumed(resumed, precision, dist)
    write = lambda path, extra: save_checkpoint(path, model, optimizer, state, cfg, **extra)  # noqa: E731
    save_mid_epoch = train_resume.mid_epoch_saver(exp_dir, state, precision, dist, write)
    while state.epoch < cfg.num_epochs:
        t0 = time.time()
        train_loss = train_one_epoch(
            net, loss_fn, optimizer, train_examples, cfg, state, device, dist, precision, curves, save_mid_epoch
        )
        state.epoch += 1
        extra = train_resume.resume_extra(precision, dist)
        if dist.is_main:
            finish_epoch(model, optimizer, dev_utterances, cfg, state, exp_dir, device, train_loss, t0, extra)
            curves.end_epoch(state.history, state.step)
        if dist.world_size > 1:
            torch.distributed.barrier()
    curves.close()

    if dist.is_main:
        write_history(exp_dir, state)
    if dist.world_size > 1:
        torch.distributed.destroy_process_group()
