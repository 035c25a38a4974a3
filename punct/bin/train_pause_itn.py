#!/usr/bin/env python3
"""egs/parczech stage 6: the pause-only baseline of the punctuation head (punct.models.pause), decode jsonl of dev
and test in the format every model of stage 6 writes (punct.scoring.itn), so that score_itn scores it as a row.

Per word, features from the segments' word times alone (<segments-dir>/<prefix>_supervisions_<split>.jsonl.gz,
alignment["word"]: the recognised word times stage 3 kept, which the speech models see as the segment): the silence
after and before the word, its duration and whether it ends the segment.  A segment spans its first word's start to
its last word's end, so the first word has no silence before it and the last none after it.  Every candidate of the
grid (--config, or the flags below) is fit on --train-split (9 punctuation classes) and compared on --dev-split by
--metric (default: macro F1, stage 6's headline); the best is kept.  Word times say nothing about capitals: every
case prediction is blank ([cap] F1 0).  --first-word: each segment's first word is fit on, chosen on and scored
(include) or not (exclude: its labels are copied from the reference, as every model of the recipe writes them);
auto takes the rule of the predictions in --rule-from's decode/<dev split>.jsonl (the rows it is scored beside).
Writes <exp-dir>/model.pkl, choice.json and decode/<split>.jsonl per --decode-splits split, then <exp-dir>/.done; a
re-run skips a folder finished after its inputs changed, from the same inputs, seed, candidates and rules, unless
--overwrite.

  python -m punct.bin.train_pause_itn --prefix parczech --segments-dir data/segments --rule-from exp/text \\
      --exp-dir exp/pause
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from punct.labels import CASE, FIRST_WORD_RULES, PUNCT9
from punct.models.pause.decode import write_itn_decode
from punct.models.pause.features import read_word_pauses
from punct.models.pause.model import METRICS, PauseConfig, classifier_threads
from punct.models.pause.train import PauseRequest, add_pause_arguments, is_trained, train_pause
from punct.scoring.itn import read_predictions, scoring_rule
from punct.utils.atomic import clear_done, mark_done
from punct.utils.cli import HelpFormatter
from punct.utils.config import config_from_args
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--segments-dir", type=Path, default=Path("data/segments"), help="stage-3 segments")
    parser.add_argument(
        "--prefix", required=True, help="<prefix>_supervisions_<split>.jsonl.gz in --segments-dir (e.g. parczech)"
    )
    parser.add_argument("--decode-splits", nargs="+", default=["dev", "test"], help="splits whose decode is written")
    parser.add_argument(
        "--first-word",
        choices=("auto",) + FIRST_WORD_RULES,
        default="auto",
        help="each segment's first word: include, exclude, or auto (the rule of --rule-from's predictions)",
    )
    parser.add_argument(
        "--rule-from", type=Path, default=None, help="--first-word auto: a model folder with decode/<dev split>.jsonl"
    )
    parser.add_argument("--metric", choices=METRICS, default="macro", help="the dev F1 the candidates are compared on")
    add_pause_arguments(parser)
    return parser


def first_word_rule(choice: str, rule_from: Path | None, dev_split: str) -> str:
    """``choice``, or for auto the rule that the predictions of ``rule_from`` were written under."""
    if choice != "auto":
        return choice
    if rule_from is None:
        raise ValueError("--first-word auto needs --rule-from (a model folder with decode/<dev split>.jsonl)")
    return scoring_rule(read_predictions(rule_from / "decode" / f"{dev_split}.jsonl"))


def main(argv: list[str] | None = None) -> None:
    args = get_parser().parse_args(argv)
    setup_logging(args.exp_dir / "log" / "train_pause_itn.log")
    log_config(vars(args), "arguments")
    config = config_from_args(PauseConfig, args, args.config)
    first_word = first_word_rule(args.first_word, args.rule_from, args.dev_split)
    logging.info("first word of each segment: %s; candidates: %s", first_word, config)
    splits = dict.fromkeys([args.train_split, args.dev_split, *args.decode_splits])
    segments = {s: args.segments_dir / f"{args.prefix}_supervisions_{s}.jsonl.gz" for s in splits}
    request = PauseRequest(segments, args.seed, config, first_word, args.metric)
    if not args.overwrite and is_trained(args.exp_dir, request):
        logging.info("%s is done; skipping (use --overwrite to redo)", args.exp_dir)
        return
    clear_done(args.exp_dir)
    pauses = {s: read_word_pauses(path, PUNCT9, CASE) for s, path in segments.items()}
    with classifier_threads(args.num_threads):
        model = train_pause(pauses[args.train_split], pauses[args.dev_split], PUNCT9.classes, request, args.exp_dir)
        for split in args.decode_splits:
            write_itn_decode(model, pauses[split], first_word, args.exp_dir / "decode" / f"{split}.jsonl")
    mark_done(args.exp_dir)


if __name__ == "__main__":
    main()
