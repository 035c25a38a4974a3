#!/usr/bin/env python3
"""Score per-word posteriors (argmax) against the supervisions' labels (text-only results).

  python -m punct.bin.score_text --posteriors exp/emb_bert/dev/post.scp \\
      --supervisions data/manifests/mustc_supervisions_dev.jsonl.gz --out exp/bert/results-dev

Writes ``<out>.md`` (per-class P/R/F1 for the marks, overall micro, macro F1, confusion
matrix) and ``<out>.json``; both say what was scored ("coverage": utterances and words of the
supervisions scored, and those without posteriors).  A matrix whose row count differs from the
supervision's word count is an error.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from punct.io.shards import MatrixReader
from punct.labels import PUNCT4, class_index
from punct.models.text.data import read_utterances
from punct.scoring.punct_scores import coverage, score, write_scores
from punct.utils.cli import HelpFormatter, parse_and_log


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=HelpFormatter)
    parser.add_argument("--posteriors", type=Path, required=True, help="scp of words x classes posteriors")
    parser.add_argument("--supervisions", type=Path, required=True, help="supervisions with the reference labels")
    parser.add_argument("--out", type=Path, required=True, help="output prefix: writes <out>.md and <out>.json")
    parser.add_argument("--title", default="", help="title of the markdown table")
    return parser


def main(argv: list[str] | None = None) -> None:
    args = parse_and_log(get_parser(), argv)
    classes = PUNCT4.classes
    index = class_index(classes)
    reader = MatrixReader(args.posteriors)
    ref, hyp = [], []
    manifest_words, scored_words = {}, {}
    for utt in read_utterances(args.supervisions, classes):
        manifest_words[utt.id] = len(utt.words)
        if utt.id not in reader:
            continue
        post = reader[utt.id]
        if post.shape != (len(utt.words), len(classes)):
            raise ValueError(
                f"{args.posteriors}: {utt.id} has shape {post.shape}, expected ({len(utt.words)}, {len(classes)})"
            )
        ref.extend(index[label] for label in utt.labels)
        hyp.extend(post.argmax(axis=1).tolist())
        scored_words[utt.id] = len(utt.words)
    if not ref:
        raise ValueError(f"{args.posteriors}: no scored words (no supervision of {args.supervisions} found)")
    scored = coverage(str(args.supervisions), manifest_words, scored_words, default_reason="without posteriors")
    if scored.dropped:
        logging.warning("%s: %s", args.supervisions, scored.summary())
    scores = score(ref, hyp, classes)
    write_scores(scores, args.out, args.title or f"{args.posteriors}", scored)
    logging.info(
        "%s: overall F1 %.1f (P %.1f R %.1f), macro F1 %.1f over %d words -> %s.md",
        args.title or args.posteriors,
        100 * scores.overall["f1"],
        100 * scores.overall["precision"],
        100 * scores.overall["recall"],
        100 * scores.macro_f1,
        scores.num_words,
        args.out,
    )


if __name__ == "__main__":
    main()
