#!/usr/bin/env python3
"""Train a ParCzech punctuation + case model (egs/parczech stage 4) and decode dev/test with it.

  python -m punct.bin.train_mm --model mm --config conf/mm_mini.yaml --positional true \\
      --data-dir data/segments --exp-dir exp/mm_pe [--resume] [--device auto]

``--model text``: the text-only baseline (PunctBert with punctuation and case heads);
``--model mm``: the cross-attention model (``--positional true`` adds the shared word-position
embeddings, ``--random-audio true`` permutes the audio).  Data: ``<data-dir>/parczech_
{supervisions,recordings}_<split>.jsonl.gz`` (stage 3).  The dev set is scored after every
epoch; the model with the best dev macro F1 (punctuation, non-blank classes) is kept.

Writes to ``--exp-dir``: ``config.yaml``, ``epoch-N.pt`` (to resume), ``best-valid-f1.pt``
(model kind, config and weights), ``best-valid-f1.json``, ``history.json``,
``decode/<split>.jsonl`` (per-segment references and predictions, read by score_itn),
``decode/<split>.attention.json`` (cross-attention of 4 segments, multimodal models),
``log/log-train-<time>`` and finally ``.done``.

  torchrun --nproc-per-node 2 -m punct.bin.train_mm ...   # DDP (gloo on CPU, NCCL on GPU)
  ... --amp bf16|fp16 --num-workers N                     # mixed precision (fp16: CUDA only), loader processes

Under torchrun every rank trains on its share of each epoch's shuffled segments (``batch_size`` per
rank); rank 0 scores dev, writes every file above and decodes; the other ranks log to stderr.
Batches are pinned for fast copies when the device is CUDA.
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from dataclasses import asdict
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import torch
from tqdm import tqdm

from punct.labels import PUNCT9
from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import load_split
from punct.models.cross_attention.model import MODEL_KINDS, build_model
from punct.models.cross_attention.train import (attention_examples, build_optimizer, loader, lr_factor, predict, quartile_worst,
                            to_device, two_head_loss)
from punct.utils.atomic import atomic_path, atomic_write_text, mark_done
from punct.training.checkpoint import load_checkpoint, rng_state, set_rng_state
from punct.utils.config import add_config_arguments, config_from_args, save_config
from punct.utils.logging import log_config
from punct.training.loop import (NO_AMP, Amp, DistInfo, TrainState, add_amp_argument, latest_checkpoint,
                                  prune_checkpoints, seed_everything, setup_distributed, start_rank_logging, wrap_ddp)


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model", choices=MODEL_KINDS, required=True, help="text: text-only baseline; mm: cross-attention")
    parser.add_argument("--config", type=Path, default=None, help="YAML with MmConfig values (flags override)")
    parser.add_argument("--data-dir", type=Path, required=True, help="stage-2 output with parczech_*_<split>.jsonl.gz")
    parser.add_argument("--train-split", default="train", help="training split name")
    parser.add_argument("--dev-split", default="dev", help="split for model selection")
    parser.add_argument("--decode-splits", default="dev,test", help="comma-separated splits decoded with the best model")
    parser.add_argument("--exp-dir", type=Path, required=True, help="output folder, e.g. exp/mm_pe")
    parser.add_argument("--resume", action="store_true", help="continue from the last epoch-N.pt in --exp-dir")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda (under torchrun: cuda:<local rank>)")
    add_amp_argument(parser)
    add_config_arguments(parser, MmConfig)
    return parser


def manifests(data_dir: Path, split: str):
    return data_dir / f"parczech_supervisions_{split}.jsonl.gz", data_dir / f"parczech_recordings_{split}.jsonl.gz"


def checkpoint_path(exp_dir: Path, epoch: int) -> Path:
    return exp_dir / f"epoch-{epoch}.pt"


def save_model(path: Path, model: torch.nn.Module, kind: str, cfg: MmConfig, **extra) -> None:
    with atomic_path(path) as tmp:
        torch.save({"kind": kind, "config": asdict(cfg), "model": model.state_dict(), **extra}, tmp)


def sync(dist: DistInfo) -> None:
    """Waits for all ranks (no-op in one process)."""
    if dist.world_size > 1:
        torch.distributed.barrier()


def train_one_epoch(model, optimizer, train_loader, cfg: MmConfig, state: TrainState, total_steps: int,
                    device: torch.device, amp: Amp = NO_AMP, progress: bool = True) -> Dict[str, float]:
    """One pass over (this rank's share of) the training set; returns the mean losses.  The model runs
    under ``amp``'s autocast, the losses on float32 logits."""
    model.train()
    sums = {"loss": 0.0, "punct": 0.0, "case": 0.0}
    count = 0
    epoch = state.epoch + 1
    for i, batch in enumerate(tqdm(train_loader, desc=f"epoch {epoch}", mininterval=10, disable=not progress)):
        batch = to_device(batch, device)
        factor = lr_factor(state.step, total_steps, cfg.warmup_fraction)
        for group in optimizer.param_groups:
            group["lr"] = group["peak_lr"] * factor
        with amp.autocast():
            logits = model(batch)
        logits = {name: x.float() for name, x in logits.items()}
        loss, parts = two_head_loss(logits, batch, cfg.punct_weight, cfg.case_weight)
        optimizer.zero_grad(set_to_none=True)
        amp.step(loss, optimizer, model.parameters(), cfg.grad_clip)
        state.step += 1
        count += 1
        sums["loss"] += float(loss.detach())
        for k, v in parts.items():
            sums[k] += v
        if (i + 1) % cfg.log_interval == 0:
            logging.info("epoch %d batch %d: loss %.4f (punct %.4f, case %.4f), lr factor %.3f", epoch, i + 1,
                         float(loss.detach()), parts["punct"], parts["case"], factor)
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
    logging.info("resumed from %s (epoch %d, best dev macro F1 %.4f at epoch %d)", ckpt, state.epoch, state.best_f1,
                 state.best_epoch)
    return state


def score_dev(model: torch.nn.Module, dev, cfg: MmConfig, state: TrainState, losses: Dict[str, float],
              device: torch.device, pad_id: int, seconds: float) -> Optional[Dict]:
    """Dev scores of the epoch just trained into ``state.history``; when its macro F1 is the best so far,
    the epoch becomes ``state.best_epoch`` and its punctuation and case scores are returned."""
    preds = predict(model, dev, cfg, device, pad_id)
    p_scores, c_scores = preds.scores()
    f1 = p_scores.macro_f1
    record = {"epoch": state.epoch, "step": state.step, **{f"train_{k}": v for k, v in losses.items()},
              "dev_loss": float(np.mean(preds.losses)), "dev_macro_f1": f1, "dev_cap_f1": c_scores.per_class["cap"]["f1"],
              **{f"dev_f1_{c}": p_scores.per_class[c]["f1"] for c in PUNCT9.classes[1:]}}
    state.history.append(record)
    logging.info("epoch %d: train loss %.4f, dev loss %.4f, dev macro F1 %.4f, [cap] F1 %.4f (%s), %.0f s", state.epoch,
                 losses["loss"], record["dev_loss"], f1, record["dev_cap_f1"],
                 ", ".join(f"{c} {p_scores.per_class[c]['f1']:.3f}" for c in PUNCT9.classes[1:]), seconds)
    if f1 > state.best_f1:
        state.best_f1, state.best_epoch = f1, state.epoch
        return {"dev_punct": p_scores.to_dict(), "dev_case": c_scores.to_dict()}
    return None


def save_best(exp_dir: Path, model: torch.nn.Module, kind: str, cfg: MmConfig, state: TrainState,
              scores: Dict) -> None:
    save_model(exp_dir / "best-valid-f1.pt", model, kind, cfg, epoch=state.epoch)
    atomic_write_text(exp_dir / "best-valid-f1.json", json.dumps({"epoch": state.epoch, **scores}, indent=2) + "\n")
    logging.info("new best dev macro F1 %.4f: saved %s", state.best_f1, exp_dir / "best-valid-f1.pt")


def decode(model: torch.nn.Module, data, split: str, out_dir: Path, cfg: MmConfig, device: torch.device, pad_id: int,
           best_epoch: int) -> None:
    """Predictions of ``split`` to out_dir/<split>.jsonl, and cross-attention maps of hard segments."""
    preds = predict(model, data, cfg, device, pad_id)
    preds.write(out_dir / f"{split}.jsonl")
    p_scores, c_scores = preds.scores()
    logging.info("%s (best epoch %d): macro F1 %.4f, overall F1 %.4f, [cap] F1 %.4f", split, best_epoch,
                 p_scores.macro_f1, p_scores.overall["f1"], c_scores.per_class["cap"]["f1"])
    tokenizer = model.text.tokenizer
    examples = attention_examples(model, data, quartile_worst(data, preds.losses), device, pad_id, tokenizer)
    if examples:
        atomic_write_text(out_dir / f"{split}.attention.json", json.dumps(examples, ensure_ascii=False) + "\n")


def main(argv: Optional[List[str]] = None) -> None:
    args = get_parser().parse_args(argv)
    exp_dir: Path = args.exp_dir
    start_rank_logging(exp_dir)
    cfg = config_from_args(MmConfig, args, args.config)
    log_config({"model": args.model, **asdict(cfg)})
    if cfg.num_threads > 0:
        torch.set_num_threads(cfg.num_threads)
    dist, device = setup_distributed(args.device)
    precision = Amp(args.amp, device.type)
    pin = device.type == "cuda"
    seed_everything(cfg.seed)
    if dist.is_main:
        save_config(cfg, exp_dir / "config.yaml")

    model = build_model(args.model, cfg)
    tokenizer = model.text.tokenizer
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    num_params = sum(p.numel() for p in model.parameters())
    text_params = sum(p.numel() for p in model.text.encoder.parameters())
    logging.info("model %s: %.2f M parameters (text encoder %.2f M, the rest %.2f M)", args.model, num_params / 1e6,
                 text_params / 1e6, (num_params - text_params) / 1e6)
    model.to(device)
    with_audio = model.uses_audio

    train_sup, train_rec = manifests(args.data_dir, args.train_split)
    dev_sup, dev_rec = manifests(args.data_dir, args.dev_split)
    train = load_split(train_sup, train_rec, tokenizer, cfg, with_audio, cfg.max_train_segments)
    dev = load_split(dev_sup, dev_rec, tokenizer, cfg, with_audio) if dist.is_main else None
    if not len(train):
        raise ValueError(f"{train_sup}: no training segments")
    train_loader = loader(train, cfg.batch_size, True, cfg.seed, pad_id, cfg.num_workers, dist=dist, pin_memory=pin)
    total_steps = cfg.num_epochs * len(train_loader)

    optimizer = build_optimizer(model, cfg)
    state = resume(exp_dir, model, optimizer, device) if args.resume else TrainState()

    # parameters outside the loss (the text encoder's pooler): DDP must not wait for their gradients
    net = wrap_ddp(model, device, dist, find_unused_parameters=True)
    while state.epoch < cfg.num_epochs:
        t0 = time.time()
        # a new, seeded order each epoch (also after --resume)
        train_loader = loader(train, cfg.batch_size, True, cfg.seed + state.epoch, pad_id, cfg.num_workers, dist=dist,
                              pin_memory=pin)
        losses = train_one_epoch(net, optimizer, train_loader, cfg, state, total_steps, device, precision, dist.is_main)
        state.epoch += 1
        if not dist.is_main:
            sync(dist)  # while rank 0 scores dev and writes the checkpoints
            continue
        new_best = score_dev(model, dev, cfg, state, losses, device, pad_id, time.time() - t0)
        if new_best is not None:
            save_best(exp_dir, model, args.model, cfg, state, new_best)
        with atomic_path(checkpoint_path(exp_dir, state.epoch)) as tmp:
            torch.save({"kind": args.model, "config": asdict(cfg), "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(), "state": asdict(state), "rng": rng_state()}, tmp)
        prune_checkpoints(exp_dir, cfg.keep_last_epochs, state.epoch)
        sync(dist)
    if dist.world_size > 1:
        torch.distributed.destroy_process_group()
    if not dist.is_main:
        return
    atomic_write_text(exp_dir / "history.json", json.dumps(state.history, indent=2) + "\n")

    best = torch.load(exp_dir / "best-valid-f1.pt", map_location=device, weights_only=True)
    model.load_state_dict(best["model"])
    for split in [s for s in args.decode_splits.split(",") if s]:
        sup, rec = manifests(args.data_dir, split)
        data = dev if split == args.dev_split else load_split(sup, rec, tokenizer, cfg, with_audio)
        decode(model, data, split, exp_dir / "decode", cfg, device, pad_id, state.best_epoch)
    logging.info("done: best dev macro F1 %.4f at epoch %d -> %s", state.best_f1, state.best_epoch, exp_dir / "best-valid-f1.pt")
    mark_done(exp_dir)


if __name__ == "__main__":
    main()
