"""Initial checkpoint of an acoustic model from another trained AM (cross-lingual initialisation).

  python -m punct.bin.init_am --config conf/am_mini.yaml --source ../mustc/exp/am/best-valid-loss.pt \\
      --fbank-dir data/am_fbank --prefix parczech --exp-dir exp/am
  steps/train_am.sh --resume true ...   # starts epoch 1 from exp/am/epoch-0.pt

See ``punct.am.init_from``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from punct.am.config import AmConfig
from punct.am.init_from import write_init_checkpoint
from punct.utils.config import load_config
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--config", type=Path, required=True, help="AM config YAML of the model to train")
    parser.add_argument("--source", type=Path, required=True, help="checkpoint of the trained source AM")
    parser.add_argument("--fbank-dir", type=Path, required=True, help="training cuts (for the token table)")
    parser.add_argument("--prefix", required=True, help="cut manifest name prefix (e.g. parczech)")
    parser.add_argument("--exp-dir", type=Path, required=True, help="AM folder; gets epoch-0.pt")
    parser.add_argument("--seed", type=int, default=42, help="seed of the layers that are not copied")
    return parser


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    config = load_config(AmConfig, args.config)
    log_config({**vars(args), "am": config}, "args")
    if not args.source.is_file():
        raise FileNotFoundError(f"{args.source}: no such checkpoint")
    write_init_checkpoint(args.source, config, args.fbank_dir, args.prefix, args.exp_dir, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
