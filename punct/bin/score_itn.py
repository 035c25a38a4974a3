#!/usr/bin/env python3
"""Score ParCzech models (egs/parczech stage 6): Table 5.1 with bootstrap intervals, PDP/PDR,
F1 by input length, confusion-matrix and cross-attention plots, RESULTS.md.

  python -m punct.bin.score_itn --out-dir exp/results --splits dev,test \\
      --train-supervisions data/segments/parczech_supervisions_train.jsonl.gz \\
      exp/text:text-only exp/mm:multimodal exp/mm_pe:multimodal+PE exp/mm_pe_random:random-audio

Each positional argument is ``<model dir>:<row name>``; the model dir holds
``decode/<split>.jsonl`` (see :mod:`punct.scoring.itn` for the format) and optionally
``decode/<split>.attention.json``; an ensemble's folder holds ``alpha.json`` (punct.bin.ensemble_itn), whose
alphas chosen on dev and how RESULTS.md states.  Writes ``<out-dir>/RESULTS.md``, ``<out-dir>/scores/
<row>.<split>.json``, ``<out-dir>/plots/*.png`` and ``<out-dir>/results.json``: the run in one file (the rows in
order with their scores on every split, the first-word rule and counts per split, ``--run-seed``, and where the
recipe wrote them the AM's dev WER (``--am-dir``) and the recognition WER (``--words-dir``); punct.results.itn_systems),
from which ``punct.bin.results_table`` makes the README table.  Without a model whose row name starts with
``EfficientPunct`` (e.g. "EfficientPunct TDNN", "EfficientPunct ensemble") a placeholder row is left in the tables.

Every model but ``--baseline`` (text-only) also gets its macro F1 minus the baseline's on the same segments, with a
paired bootstrap 95 % interval (punct.scoring.intervals.paired_difference): in RESULTS.md, results.json and the README
table.
A model scored on other segments than the baseline (the ensemble without posteriors for some) gets none (logged).

The first word of each segment is scored or not by one rule per split (``--first-word``; auto: the rule the
predictions were written under, which the models' configs set: ``first_word`` in conf/mm*.yaml and
conf/tdnn*.yaml), and RESULTS.md says which (punct.labels, punct.scoring.itn).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from punct.labels import FIRST_WORD_RULES, PUNCT9
from punct.results import itn_systems as itn_results
from punct.scoring import itn
from punct.utils.atomic import atomic_write_text, mark_done
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("models", nargs="+", help="<model dir>:<row name> (decode/<split>.jsonl inside)")
    parser.add_argument("--out-dir", type=Path, required=True, help="output folder, e.g. exp/results")
    parser.add_argument("--splits", default="dev,test", help="comma-separated splits to score")
    parser.add_argument(
        "--train-supervisions",
        type=Path,
        default=None,
        help="training supervisions: sort the table's classes by their frequency (default: thesis order)",
    )
    parser.add_argument("--num-resamples", type=int, default=1000, help="bootstrap resamples of the segments")
    parser.add_argument("--seed", type=int, default=42, help="bootstrap seed")
    parser.add_argument(
        "--length-edges",
        default=",".join(map(str, itn.DEFAULT_LENGTH_EDGES)),
        help="word-count bin edges for F1 by input length",
    )
    parser.add_argument("--max-attention-plots", type=int, default=4, help="cross-attention plots per model and split")
    parser.add_argument(
        "--first-word",
        choices=("auto",) + FIRST_WORD_RULES,
        default="auto",
        help="each segment's first word: scored (include) or not (exclude); auto: the rule the "
        "predictions were written under (their first_word, set by conf/mm*.yaml and conf/tdnn*.yaml)",
    )
    parser.add_argument(
        "--baseline",
        default="text-only",
        help="row name of the model every other one is compared with (macro F1 difference, paired "
        "bootstrap interval); no such row: no comparison",
    )
    parser.add_argument("--run-seed", type=int, default=None, help="the run's seed, recorded in results.json")
    parser.add_argument(
        "--am-dir",
        type=Path,
        default=None,
        help="the acoustic model's folder: its dev WER (wer_dev.txt, stage 1) goes into results.json",
    )
    parser.add_argument(
        "--words-dir",
        type=Path,
        default=None,
        help="stage 2's recognised words: the WER in their <recording>.stats.json goes into results.json",
    )
    return parser


def train_counts(path: Path | None) -> dict[str, int] | None:
    if path is None:
        return None
    from punct.models.cross_attention.data import read_segments

    counts: dict[str, int] = {}
    for seg in read_segments(path):
        for p in seg.punct:
            counts[PUNCT9.classes[p]] = counts.get(PUNCT9.classes[p], 0) + 1
    return counts


def parse_models(specs: list[str]) -> list[tuple[Path, str]]:
    """``<model dir>:<row name>`` arguments -> (dir, row name)."""
    models = []
    for spec in specs:
        if ":" not in spec:
            raise ValueError(f"model {spec!r}: expected <model dir>:<row name>")
        path, name = spec.split(":", 1)
        models.append((Path(path), name))
    return models


def main(argv: list[str] | None = None) -> None:
    args = get_parser().parse_args(argv)
    out: Path = args.out_dir
    (out / "plots").mkdir(parents=True, exist_ok=True)
    (out / "scores").mkdir(parents=True, exist_ok=True)
    setup_logging(out / "log" / f"score-{time.strftime('%Y-%m-%d-%H-%M-%S')}")
    log_config(vars(args))
    models = parse_models(args.models)
    edges = [int(x) for x in args.length_edges.split(",") if x]
    order = itn_results.class_order(train_counts(args.train_supervisions))
    row = itn_results.EFFICIENTPUNCT_ROW
    placeholders = [] if any(n.startswith(row) for _, n in models) else [row]

    md = itn_results.header_lines(args.num_resamples, args.seed) + itn_results.alpha_lines(models)
    all_scores: dict[str, dict[str, itn.ItnScores]] = {}
    for split in [s for s in args.splits.split(",") if s]:
        first_word = None if args.first_word == "auto" else args.first_word
        all_scores[split], rule = itn_results.score_split(
            models,
            split,
            first_word,
            args.baseline,
            itn_results.Bootstrap(args.num_resamples, args.seed),
            edges,
            args.max_attention_plots,
            out,
        )
        md += itn_results.split_lines(split, all_scores[split], rule, order, placeholders)
    bootstrap = {"num_resamples": args.num_resamples, "seed": args.seed, "level": 0.95}
    results = itn_results.build_results(
        models, all_scores, order, bootstrap, args.run_seed, itn_results.run_facts(args.am_dir, args.words_dir)
    )
    atomic_write_text(out / "results.json", json.dumps(results, indent=1) + "\n")
    atomic_write_text(out / "RESULTS.md", "\n".join(md))
    print("\n".join(md))
    mark_done(out)


if __name__ == "__main__":
    main()
