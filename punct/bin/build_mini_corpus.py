"""Builds the embedded English mini corpus (Jane Austen read by espeak-ng) in MuST-C v1 layout.

python -m punct.bin.build_mini_corpus --size tiny data/corpus_tiny
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

from punct.corpora.mini_english import SIZES, build_mini_corpus, config_for_size, load_austen
from punct.synthesis.build_record import add_mini_corpus_arguments, pause_model_from_args, reuse_built_corpus
from punct.text.normalize import NormalizeConfig, add_normalize_arguments, format_mark_table
from punct.utils.config import config_from_args
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_mini_corpus_arguments(
        parser,
        SIZES,
        "tiny: a few minutes of audio (tests, CI); mini: about 80 min (the recipe default)",
        "r-cran-janeaustenr",
        "MuST-C layout: data/{train,dev,tst-COMMON}",
    )
    parser.add_argument(
        "--text-file",
        type=Path,
        default=None,
        help="read this UTF-8 text file (blank-line separated paragraphs) instead of Jane Austen",
    )
    parser.add_argument("--nj", type=int, default=1, help="talks synthesized in parallel")
    add_normalize_arguments(parser)
    return parser


def main() -> None:
    args = get_parser().parse_args()
    try:
        cfg = config_for_size(args.size, args.seed, args.prosody, pause_model_from_args(args))
        if reuse_built_corpus(args.out_dir, cfg, args.overwrite):
            table = (args.out_dir / "labels.txt").read_text(encoding="utf-8")
            print(
                f"{args.out_dir} is already built (size {args.size}, seed {args.seed}, prosody {args.prosody}); "
                f"--overwrite rebuilds it\n"
                f"{table}",
                end="",
            )
            return
    except ValueError as err:
        sys.exit(f"build_mini_corpus: {err}")
    setup_logging(args.log_file)
    norm = config_from_args(NormalizeConfig, args, args.normalize_config, prefix="norm-")
    log_config({"args": vars(args), "corpus": cfg, "normalize": norm})
    logging.info("labels:\n%s", format_mark_table(norm))
    begin = time.time()
    if args.text_file is not None:
        books = {args.text_file.stem: args.text_file.read_text(encoding="utf-8").splitlines()}
    else:
        books = load_austen(args.cache_dir)
    build_mini_corpus(args.out_dir, cfg, books, overwrite=args.overwrite, norm=norm, num_jobs=args.nj)
    table = (args.out_dir / "labels.txt").read_text(encoding="utf-8")
    print(f"label distribution of {args.out_dir} (also in {args.out_dir}/labels.txt):\n{table}", end="")
    logging.info("built %s (%s) in %.1f s", args.out_dir, args.size, time.time() - begin)


if __name__ == "__main__":
    main()
