#!/usr/bin/env python3
"""Score per-word posteriors (argmax) against the supervisions' labels (text-only results).

  python -m punct.bin.score_text --posteriors exp/emb_bert/dev/post.scp \\
      --supervisions data/manifests/mustc_supervisions_dev.jsonl.gz --out exp/bert/results-dev

Writes ``<out>.md`` (per-class P/R/F1 for the marks, overall micro, macro F1, confusion
matrix) and ``<out>.json``.  Supervisions missing from the posteriors are counted and logged;
a matrix whose row count differs from the supervision's word count is an error.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import List, Optional

from punct.io.shards import MatrixReader
from punct.metrics import score, write_scores
from punct.text.data import read_utterances
from punct.text.labels import MUSTC_CLASSES, class_index
from punct.utils.logging import log_config, setup_logging


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Shows defaults and keeps the layout of the module docstring."""


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--posteriors", type=Path, required=True, help="scp of words x classes posteriors")
    parser.add_argument("--supervisions", type=Path, required=True, help="supervisions with the reference labels")
    parser.add_argument("--out", type=Path, required=True, help="output prefix: writes <out>.md and <out>.json")
    parser.add_argument("--title", default="", help="title of the markdown table")
    return parser


def main(argv: Optional[List[str]] = None) -> None:
    args = get_parser().parse_args(argv)
    setup_logging()
    log_config(vars(args), "arguments")
    classes = MUSTC_CLASSES
    index = class_index(classes)
    reader = MatrixReader(args.posteriors)
    ref, hyp, missing = [], [], 0
    for utt in read_utterances(args.supervisions, classes):
        if utt.id not in reader:
            missing += 1
            continue
        post = reader[utt.id]
        if post.shape != (len(utt.words), len(classes)):
            raise ValueError(f"{args.posteriors}: {utt.id} has shape {post.shape}, expected ({len(utt.words)}, {len(classes)})")
        ref.extend(index[label] for label in utt.labels)
        hyp.extend(post.argmax(axis=1).tolist())
    if missing:
        logging.warning("%d supervision(s) of %s have no posteriors in %s", missing, args.supervisions, args.posteriors)
    if not ref:
        raise ValueError(f"{args.posteriors}: no scored words (no supervision of {args.supervisions} found)")
    scores = score(ref, hyp, classes)
    write_scores(scores, args.out, args.title or f"{args.posteriors}")
    logging.info("%s: overall F1 %.1f (P %.1f R %.1f), macro F1 %.1f over %d words -> %s.md", args.title or args.posteriors,
                 100 * scores.overall["f1"], 100 * scores.overall["precision"], 100 * scores.overall["recall"],
                 100 * scores.macro_f1, scores.num_words, args.out)


if __name__ == "__main__":
    main()
