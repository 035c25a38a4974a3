#!/usr/bin/env python3
"""Train a ParCzech punctuation + case model (egs/parczech stage 4) and decode dev/test with it.

  python -m punct.bin.train_mm --model mm --config conf/mm_mini.yaml --positional true \\
      --data-dir data/segments --exp-dir exp/mm_pe [--resume] [--device auto]

``--model text``: the text-only baseline (PunctBert with punctuation and case heads);
``--model mm``: the cross-attention model (``--positional true`` adds the shared word-position
embeddings, ``--random-audio true`` permutes the audio).  Data: ``<data-dir>/parczech_
{supervisions,recordings}_<split>.jsonl.gz`` (stage 3).  The dev set is scored after every
epoch; the epoch with the best dev macro F1 (punctuation, non-blank classes), the lowest dev loss
(``dev_metric: loss``) or the last epoch (``dev_metric: last``) is kept, or with ``average_epochs: N`` > 1 the
average of the last N epochs' weights.

Writes to ``--exp-dir``: ``config.yaml``, ``epoch-N.pt`` (to resume), ``best-valid-f1.pt``
(model kind, config and weights), ``best-valid-f1.json``, ``history.json``,
``decode/<split>.jsonl`` (per-segment references and predictions, read by score_itn),
``decode/<split>.attention.json`` (cross-attention of 4 segments, multimodal models),
``log/log-train-<time>`` and finally ``.done``.

  torchrun --nproc-per-node 2 -m punct.bin.train_mm ...   # DDP (gloo on CPU, NCCL on GPU)
  ... --amp bf16|fp16|auto|fastest --num-workers N        # mixed precision (the config's amp unless given;
                                                          # fp16: CUDA only), loader processes

Under torchrun every rank trains on its share of each epoch's shuffled segments (``batch_size`` per
rank); rank 0 scores dev, writes every file above and decodes; the other ranks log to stderr.
Batches are pinned for fast copies when the device is CUDA.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

from punct.models.cross_attention.config import MmConfig
from punct.models.cross_attention.data import split_manifests
from punct.models.cross_attention.model import MODEL_KINDS
from punct.models.cross_attention.train import run_training
from punct.training.loop import add_resume_device_amp_arguments, start_rank_logging
from punct.utils.config import add_config_arguments, config_from_args
from punct.utils.logging import log_config


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "--model", choices=MODEL_KINDS, required=True, help="text: text-only baseline; mm: cross-attention"
    )
    parser.add_argument("--config", type=Path, default=None, help="YAML with MmConfig values (flags override)")
    parser.add_argument(
        "--data-dir", type=Path, required=True, help="segments: <prefix>_{supervisions,recordings}_<split>.jsonl.gz"
    )
    parser.add_argument("--prefix", required=True, help="manifest name prefix (e.g. parczech)")
    parser.add_argument("--train-split", default="train", help="training split name")
    parser.add_argument("--dev-split", default="dev", help="split for model selection")
    parser.add_argument(
        "--decode-splits", default="dev,test", help="comma-separated splits decoded with the best model"
    )
    parser.add_argument("--exp-dir", type=Path, required=True, help="output folder, e.g. exp/mm_pe")
    parser.add_argument(
        "--am-frames",
        type=Path,
        default=None,
        help="sound_encoder am: the AM frames of every split from <dir>/<split>/frames.scp (punct.bin.dump_am_frames) "
        "instead of computing them; its frames.json must name the model's audio (real, or random with --seed)",
    )
    add_resume_device_amp_arguments(parser, amp=False)  # --amp: MmConfig's amp
    add_config_arguments(parser, MmConfig)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = get_parser().parse_args(argv)
    start_rank_logging(args.exp_dir)
    cfg = config_from_args(MmConfig, args, args.config)
    log_config({"model": args.model, **asdict(cfg)})
    splits = [args.train_split, args.dev_split, *(s for s in args.decode_splits.split(",") if s)]
    am_frames = {}
    if args.am_frames is not None:
        am_frames = {split_manifests(args.data_dir, args.prefix, s): args.am_frames / s / "frames.scp" for s in splits}
    run_training(
        args.model,
        cfg,
        train_paths=split_manifests(args.data_dir, args.prefix, args.train_split),
        dev_paths=split_manifests(args.data_dir, args.prefix, args.dev_split),
        decode_paths={s: split_manifests(args.data_dir, args.prefix, s) for s in splits[2:]},
        exp_dir=args.exp_dir,
        resume_run=args.resume,
        device_name=args.device,
        amp=cfg.amp,
        am_frames=am_frames,
    )


if __name__ == "__main__":
    main()
