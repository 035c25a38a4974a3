#!/usr/bin/env python3
"""Fine-tune a BERT-like encoder + EfficientPunct head for per-word punctuation (stage 5).

  python -m punct.bin.train_bert --config conf/bert_mini.yaml \\
      --train data/manifests/<prefix>_supervisions_train.jsonl.gz \\
      --dev data/manifests/<prefix>_supervisions_dev.jsonl.gz --exp-dir exp/bert [--loss scl] [--resume]
  torchrun --nproc-per-node 2 -m punct.bin.train_bert ...   # DDP (gloo on CPU, NCCL on GPU)
  ... --amp bf16|fp16                                       # mixed precision (fp16: CUDA only)

Under torchrun every rank trains on its share of each epoch's shuffled chunks: ``batch_size`` is per
rank, and the ranks' batches of one step together are the batch one process with ``batch_size`` x
ranks would train on.  Rank 0 scores dev and writes every file below; the other ranks log to stderr.

Writes ``<exp-dir>/config.yaml``, ``epoch-N.pt`` (model, optimiser and state, to resume),
``best-valid-f1/`` (the model folder with the best overall dev F1, loadable by
``PunctBert.from_pretrained``), ``best-valid-f1.json`` (its epoch and dev scores),
``log/log-train-<time>`` and finally ``<exp-dir>/.done``.  The loop: :mod:`punct.models.text.train`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.models.text.config import BertTrainConfig
from punct.models.text.train import run_training
from punct.text.normalize import NormalizeConfig, add_normalize_arguments
from punct.training.loop import add_resume_device_amp_arguments, start_rank_logging
from punct.utils.cli import HelpFormatter
from punct.utils.config import add_config_arguments, config_from_args
from punct.utils.logging import log_config


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--config", type=Path, default=None, help="YAML with BertTrainConfig values (flags override)")
    parser.add_argument("--train", type=Path, required=True, help="training supervisions (lhotse jsonl.gz)")
    parser.add_argument("--dev", type=Path, required=True, help="dev supervisions for model selection")
    parser.add_argument("--exp-dir", type=Path, required=True, help="output folder, e.g. exp/bert")
    add_resume_device_amp_arguments(parser, amp=False)  # --amp: the config's amp field
    add_config_arguments(parser, BertTrainConfig)
    add_normalize_arguments(parser)  # labels of --extra-text: the corpus preparation's mapping
    return parser


def main(argv: list[str] | None = None) -> None:
    args = get_parser().parse_args(argv)
    start_rank_logging(args.exp_dir)
    cfg = config_from_args(BertTrainConfig, args, args.config)
    norm = config_from_args(NormalizeConfig, args, args.normalize_config, prefix="norm-")
    log_config(cfg)
    log_config(norm, "extra text labels (normalize)")
    run_training(
        cfg,
        train=args.train,
        dev=args.dev,
        exp_dir=args.exp_dir,
        resume=args.resume,
        device_name=args.device,
        amp=cfg.amp,
        norm=norm,
    )


if __name__ == "__main__":
    main()
