"""Stage 2: train the TDNN acoustic model with CTC over characters.

  python -m punct.bin.train_am --config conf/am_mini.yaml --fbank-dir data/fbank --exp-dir exp/am
  torchrun --nproc-per-node 2 -m punct.bin.train_am --config conf/am.yaml ...   # DDP (gloo on CPU, NCCL on GPU)

GPU options: --amp none|bf16|fp16|auto|fastest (mixed precision; the config's ``amp`` unless given), --num-workers N
(feature-loading processes; batches are pinned when the device is CUDA).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from punct.am.config import AmConfig
from punct.am.train import run_training
from punct.utils.cli import add_device_arguments
from punct.utils.config import add_config_arguments, config_from_args
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--config", type=Path, default=None, help="AM config YAML (conf/am.yaml, conf/am_mini.yaml)")
    parser.add_argument("--fbank-dir", type=Path, required=True, help="stage-1 output (cuts, features, CMVN)")
    parser.add_argument("--exp-dir", type=Path, required=True, help="output folder (checkpoints, tokens.txt)")
    parser.add_argument("--prefix", required=True, help="cut manifest name prefix (e.g. mustc)")
    parser.add_argument("--train-split", default="train", help="split to train on")
    parser.add_argument(
        "--extra-train-dirs",
        type=Path,
        nargs="*",
        default=[],
        help="more stage-1 folders whose train split is added to the training data (AM only)",
    )
    parser.add_argument("--dev-split", default="dev", help="split for the validation loss")
    parser.add_argument("--seed", type=int, default=42, help="random seed (model init, sampler, SpecAugment)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue from the newest checkpoint in --exp-dir: epoch-N.pt or, with save_every_n_steps, a newer "
        "mid-epoch epoch-E-batch-B.pt (to the uninterrupted run's weights)",
    )
    add_device_arguments(parser, num_threads=0, threads_help="torch CPU threads per process (0: torch's default)")
    add_config_arguments(parser, AmConfig)
    return parser


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    if args.num_threads > 0:
        torch.set_num_threads(args.num_threads)
    config = config_from_args(AmConfig, args, args.config)
    log_config(config)
    state, _ = run_training(
        config=config,
        fbank_dir=args.fbank_dir,
        exp_dir=args.exp_dir,
        prefix=args.prefix,
        device_name=args.device,
        seed=args.seed,
        resume=args.resume,
        train_split=args.train_split,
        dev_split=args.dev_split,
        extra_train_dirs=args.extra_train_dirs,
        amp=config.amp,
    )
    selected = (
        f"average of epochs {state.best_epoch - state.best_averaged + 1}-{state.best_epoch}"
        if state.best_averaged > 1
        else f"best epoch {state.best_epoch}"
    )
    print(f"{selected}, dev loss/frame {state.best_valid_loss:.4f}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
