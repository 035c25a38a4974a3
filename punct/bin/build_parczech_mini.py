"""Builds the embedded Czech mini corpus (fortunes-cs read by espeak-ng) in ParCzech layout.

python -m punct.bin.build_parczech_mini --size tiny data/corpus_tiny
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time

from punct.corpora.mini_czech import SIZES, build_czech_mini_corpus, config_for_size
from punct.synthesis.build_record import add_mini_corpus_arguments, pause_model_from_args, reuse_built_corpus
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_mini_corpus_arguments(
        parser,
        SIZES,
        "tiny: ~5 min of audio (tests); mini: about an hour (the recipe default); "
        "small: ~4 h, 40 speakers, rare marks preferred",
        "fortunes-cs",
        "ParCzech layout: audio, verticals, speakers",
    )
    return parser


def main(argv: list[str] | None = None) -> None:
    args = get_parser().parse_args(argv)
    try:
        cfg = config_for_size(args.size, args.seed, args.prosody, pause_model_from_args(args))
        if reuse_built_corpus(args.out_dir, cfg, args.overwrite):
            print(
                f"{args.out_dir} is already built (size {args.size}, seed {args.seed}, prosody {args.prosody}); "
                "--overwrite rebuilds it"
            )
            return
    except ValueError as err:
        sys.exit(f"build_parczech_mini: {err}")
    setup_logging(args.log_file)
    log_config({"args": vars(args), "corpus": cfg})
    begin = time.time()
    summary = build_czech_mini_corpus(args.out_dir, cfg, args.cache_dir, overwrite=args.overwrite)
    print(
        json.dumps(
            {"hours": summary["hours"], "recordings": len(summary["recordings"]), **summary["counts"]},
            ensure_ascii=False,
        )
    )
    logging.info("built %s (%s) in %.1f s", args.out_dir, args.size, time.time() - begin)


if __name__ == "__main__":
    main()
