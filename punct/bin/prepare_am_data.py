"""egs/parczech stage 1: utterance-level AM training manifests cut from the long recordings.

  python -m punct.bin.prepare_am_data --manifest-dir data/manifests --words-dir data/corpus_mini/synth \\
      --out-dir data/am_manifests --seed 42

Writes ``<prefix>_{recordings,supervisions}_{train,dev}.jsonl.gz`` (see ``punct.am_data.long_audio``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from punct.am_data.long_audio import AmDataConfig, prepare_am_data
from punct.utils.config import add_config_arguments, config_from_args
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--manifest-dir", type=Path, required=True, help="stage 0 output (<prefix>_*_all.jsonl.gz)")
    parser.add_argument(
        "--words-dir",
        type=Path,
        required=True,
        help="folder of <recording id>.words.tsv with the words really spoken (the synth folder)",
    )
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder (data/am_manifests)")
    parser.add_argument("--config", type=Path, default=None, help="YAML with AmDataConfig values")
    parser.add_argument("--seed", type=int, default=42, help="seed of the held-out dev recordings")
    parser.add_argument("--prefix", required=True, help="manifest name prefix (input and output) (e.g. parczech)")
    add_config_arguments(parser, AmDataConfig)
    return parser


def main(argv=None) -> int:
    args = get_parser().parse_args(argv)
    setup_logging()
    config = config_from_args(AmDataConfig, args, args.config)
    log_config(config)
    prepare_am_data(args.manifest_dir, args.words_dir, args.out_dir, config, seed=args.seed, prefix=args.prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
