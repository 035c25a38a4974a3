#!/usr/bin/env python3
"""egs/mustc stage 8: the pause-only baseline (punct.models.pause), posteriors of dev and test.

Per word, features from the word times of stage 3's forced alignment alone (<cuts-dir>/<cuts-pattern>: the
aligned cuts stage 7's TDNN reads): the silence after and before the word, its duration and whether it ends
the segment.  Every candidate of the grid (--config, or the flags below: logistic regression and boosted
trees, with and without class weights) is fit on --train-split and scored on --dev-split by overall (micro) F1;
the best is kept.  Writes <exp-dir>/model.pkl, <exp-dir>/choice.json (the dev grid and the choice) and per
--decode-splits split <exp-dir>/<split>/post.scp (words x classes, punct4 order, by cut id), then <exp-dir>/.done;
a re-run skips a folder finished after its inputs changed, from the same inputs, seed and candidates,
unless --overwrite.

  python -m punct.bin.train_pause --cuts-dir data/fbank --cuts-pattern 'mustc_cuts_{split}_ali.jsonl.gz' \\
      --exp-dir exp/pause --seed 42
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from punct.labels import PUNCT4
from punct.models.pause.decode import write_posteriors
from punct.models.pause.features import read_word_pauses
from punct.models.pause.model import PauseConfig, classifier_threads
from punct.models.pause.train import PauseRequest, add_pause_arguments, is_trained, train_pause
from punct.utils.atomic import clear_done, mark_done
from punct.utils.cli import HelpFormatter
from punct.utils.config import config_from_args
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--cuts-dir", type=Path, default=Path("data/fbank"), help="folder of the aligned cuts")
    parser.add_argument(
        "--cuts-pattern",
        required=True,
        help="aligned cuts in --cuts-dir, {split} = split (e.g. mustc_cuts_{split}_ali.jsonl.gz)",
    )
    parser.add_argument(
        "--decode-splits", nargs="+", default=["dev", "test"], help="splits whose posteriors are written"
    )
    add_pause_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = get_parser().parse_args(argv)
    setup_logging(args.exp_dir / "log" / "train_pause.log")
    log_config(vars(args), "arguments")
    config = config_from_args(PauseConfig, args, args.config)
    log_config(config)
    splits = dict.fromkeys([args.train_split, args.dev_split, *args.decode_splits])
    cuts = {s: args.cuts_dir / args.cuts_pattern.format(split=s) for s in splits}
    request = PauseRequest(cuts, args.seed, config)
    if not args.overwrite and is_trained(args.exp_dir, request):
        logging.info("%s is done; skipping (use --overwrite to redo)", args.exp_dir)
        return
    clear_done(args.exp_dir)
    pauses = {s: read_word_pauses(path, PUNCT4) for s, path in cuts.items()}
    with classifier_threads(args.num_threads):
        model = train_pause(pauses[args.train_split], pauses[args.dev_split], PUNCT4.classes, request, args.exp_dir)
        for split in args.decode_splits:
            write_posteriors(model, pauses[split], args.exp_dir / split / "post")
    mark_done(args.exp_dir)


if __name__ == "__main__":
    main()
