#!/usr/bin/env python3
"""Stage 7: train the EfficientPunct punctuation TDNN on fused [BERT ; layer-12] windows.

Reads, for the train and dev splits, the aligned cuts (<cuts-dir>/<cuts-pattern>, e.g.
mustc_cuts_{split}_ali.jsonl.gz, or parczech_cuts_{split}.jsonl.gz for ParCzech segments with ``label_set: itn``),
the layer-12 matrices (<am-emb-dir>/<split>/emb.scp) and the per-word BERT vectors
(<bert-emb-dir>/<split>/vec.scp); windows are cut at load time.  Writes <exp-dir>/epoch-N.pt,
<exp-dir>/best-valid-f1.pt (best dev overall F1), config.yaml and train_history.json.

Single process:   python -m punct.bin.train_tdnn --config conf/tdnn_mini.yaml \\
                    --cuts-pattern 'mustc_cuts_{split}_ali.jsonl.gz' --exp-dir exp/tdnn
Several (DDP):    torchrun --nproc-per-node 2 -m punct.bin.train_tdnn --config conf/tdnn.yaml ...
GPU options:      --amp bf16|fp16|auto|fastest (mixed precision), --num-workers N (window-cutting processes; batches
                  are pinned when the device is CUDA)
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

import torch

from punct.io.sources import split_sources
from punct.models.punct_tdnn.config import TrainTdnnConfig, corpus_classes
from punct.models.punct_tdnn.dataset import FusionCorpus, open_split, split_paths
from punct.models.punct_tdnn.train import train_tdnn
from punct.training.checkpoint import load_checkpoint
from punct.training.loop import add_amp_argument, dist_from_env, setup_distributed
from punct.training.precision import check_amp
from punct.training.resume import newest_checkpoint
from punct.utils.atomic import atomic_write_text, mark_done
from punct.utils.cli import TORCHRUN_DEVICE_HELP, add_device_arguments
from punct.utils.config import add_config_arguments, config_from_args, save_config
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--config", type=Path, default=None, help="YAML config (conf/tdnn.yaml or conf/tdnn_mini.yaml)")
    parser.add_argument(
        "--cuts-dir", type=Path, default=Path("data/fbank"), help="folder of the aligned cuts (--cuts-pattern)"
    )
    parser.add_argument(
        "--cuts-pattern",
        required=True,
        help="cut manifest name in --cuts-dir, {split} = split (e.g. mustc_cuts_{split}_ali.jsonl.gz)",
    )
    parser.add_argument(
        "--am-emb-dir", type=Path, default=Path("exp/emb_am"), help="layer-12 shards: <dir>/<split>/emb.scp"
    )
    parser.add_argument(
        "--bert-emb-dir", type=Path, default=Path("exp/emb_bert"), help="BERT word vectors: <dir>/<split>/vec.scp"
    )
    parser.add_argument("--train-split", default="train", help="training split name")
    parser.add_argument("--dev-split", default="dev", help="dev split (checkpoint selection); empty: none")
    parser.add_argument("--exp-dir", type=Path, default=Path("exp/tdnn"), help="output folder")
    parser.add_argument(
        "--resume",
        default="",
        help="checkpoint to continue from, or 'latest' for the newest in --exp-dir (epoch-N.pt or, with "
        "save_every_n_steps, a newer mid-epoch epoch-E-batch-B.pt)",
    )
    parser.add_argument("--seed", type=int, default=42, help="seed of initialisation and example order")
    add_device_arguments(
        parser,
        num_threads=0,
        threads_help="torch intra-op threads (0: torch's default)",
        device_help=TORCHRUN_DEVICE_HELP,
    )
    parser.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")
    add_amp_argument(parser)
    add_config_arguments(parser, TrainTdnnConfig)
    return parser


def open_corpora(
    args: argparse.Namespace, cfg: TrainTdnnConfig, with_dev: bool
) -> tuple[FusionCorpus, FusionCorpus | None]:
    """The train split's corpus and (``with_dev``) the dev split's, which caches no utterances."""
    classes, case_classes = corpus_classes(cfg)
    train_paths = split_paths(args.cuts_dir, args.am_emb_dir, args.bert_emb_dir, args.train_split, args.cuts_pattern)
    train_corpus = open_split(
        train_paths["cuts"],
        train_paths["acoustic_scp"],
        train_paths["text_scp"],
        cfg.cache_utterances,
        classes,
        case_classes,
        cfg.model.window_centre,
        cfg.first_word,
    )
    dev_corpus = None
    if with_dev:
        dev_paths = split_paths(args.cuts_dir, args.am_emb_dir, args.bert_emb_dir, args.dev_split, args.cuts_pattern)
        dev_corpus = open_split(
            dev_paths["cuts"],
            dev_paths["acoustic_scp"],
            dev_paths["text_scp"],
            0,
            classes,
            case_classes,
            cfg.model.window_centre,
            cfg.first_word,
        )
    return train_corpus, dev_corpus


def resume_path(resume: str, exp_dir: Path) -> Path | None:
    """The checkpoint --resume names: 'latest' is the newest in ``exp_dir`` (:func:`newest_checkpoint`; None if there
    is none), an empty string none."""
    if resume == "latest":
        latest = newest_checkpoint(exp_dir)
        if latest is None:
            logging.info("--resume latest: no epoch-N.pt in %s, starting from scratch", exp_dir)
        return latest
    return Path(resume) if resume else None


def write_history(exp_dir: Path, cfg: TrainTdnnConfig) -> None:
    """train_history.json from the last epoch's checkpoint, and the marker of best-valid-f1.pt."""
    ckpt = load_checkpoint(exp_dir / f"epoch-{cfg.epochs}.pt")
    atomic_write_text(exp_dir / "train_history.json", json.dumps(ckpt["state"], indent=2) + "\n")
    mark_done(exp_dir / "best-valid-f1.pt")
    logging.info("best dev %s %.4f at epoch %d", cfg.dev_metric, ckpt["state"]["best_f1"], ckpt["state"]["best_epoch"])


def main() -> None:
    args = get_parser().parse_args()
    dist = dist_from_env()
    log_name = "train" if dist.world_size == 1 else f"train-rank{dist.rank}"
    setup_logging(args.exp_dir / "log" / f"{log_name}.log")
    cfg = config_from_args(TrainTdnnConfig, args, args.config)
    if dist.is_main:
        log_config(cfg)
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)
    dist, device = setup_distributed(args.device)
    check_amp(args.amp, device)

    train_corpus, dev_corpus = open_corpora(args, cfg, with_dev=bool(args.dev_split) and dist.is_main)
    resume = resume_path(args.resume, args.exp_dir)
    if dist.is_main:
        args.exp_dir.mkdir(parents=True, exist_ok=True)
        save_config(cfg, args.exp_dir / "config.yaml")
    # what the shards were made from goes into the checkpoints, for whatever feeds the TDNN later
    inputs = split_sources(args.am_emb_dir, args.bert_emb_dir, [s for s in (args.train_split, args.dev_split) if s])
    train_tdnn(
        cfg,
        train_corpus,
        dev_corpus,
        args.exp_dir,
        device,
        seed=args.seed,
        resume=resume,
        dist=dist,
        progress=not args.no_progress,
        amp=args.amp,
        inputs=inputs,
    )
    if dist.is_main:
        write_history(args.exp_dir, cfg)
    if dist.world_size > 1:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
