#!/usr/bin/env python3
"""ParCzech stage 5 (last step): the EfficientPunct TDNN alone and its ensemble with the text-only model.

Per head, p = alpha * p_tdnn + (1 - alpha) * p_text for alpha = 0.0, 0.1, ..., 1.0; each head's alpha is
chosen on the dev split on its own statistic (punctuation: macro F1 over the 8 marks; case: [cap] F1) by
--alpha-rule (punct.scoring.ensemble, as egs/mustc's stage 8): paired-se (the default), the dev argmax unless it
is a mixture whose gain over the better single model (the TDNN or the text model alone) is within one standard
error of the paired bootstrap difference over the dev segments (both on the same resamples), then that single
model; one-se (the rule before), a mixture only if it beats both single models by more than the marginal
bootstrap standard error of its dev score; argmax, the highest dev score.
References and words come from the segments (data/segments/<prefix>_supervisions_<split>.jsonl.gz).
Writes, for every split, <tdnn-dir>/decode/<split>.jsonl (the TDNN alone, alpha 1) and
<out-dir>/decode/<split>.jsonl (the ensemble), scored by egs/parczech/local/score_itn.sh, and
<out-dir>/alpha.json: the dev sweep, the chosen alphas and per head the rule's record ("alpha_rule":
punct.scoring.ensemble.AlphaChoice: rule, chosen alpha, the dev argmax "best_alpha" and its "best_score", the better
single model "single_alpha" and its "single_score" (paired-se; the gain is best_score - single_score) and the
bootstrap "standard_error": of the paired gain (paired-se) or of the best alpha's score (one-se)).

--first-word (punct.labels): exclude chooses the alphas on every word but each segment's first and writes the
first word's reference labels as its predictions (the thesis); include uses every word; auto (default) takes
the rule the TDNN was trained with (``first_word`` of <tdnn-dir>/best-valid-f1.pt's config, conf/tdnn*.yaml).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from punct.labels import FIRST_WORD_RULES
from punct.models.cross_attention.data import read_segments
from punct.models.punct_tdnn.segment_ensemble import (
    HEADS,
    SplitPosteriors,
    choose_head_alphas,
    head_predictions,
    head_sweeps,
    paired_split,
    write_predictions,
)
from punct.scoring.ensemble import SweepPoint, add_alpha_rule_arguments, default_alphas
from punct.utils.atomic import atomic_write_text
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "--segments-dir", type=Path, default=Path("data/segments"), help="<prefix>_supervisions_<split>.jsonl.gz"
    )
    parser.add_argument("--prefix", required=True, help="manifest name prefix (e.g. parczech)")
    parser.add_argument(
        "--text-post-dir", type=Path, default=Path("exp/emb_text"), help="text-only posteriors: <dir>/<split>/post.scp"
    )
    parser.add_argument(
        "--tdnn-dir",
        type=Path,
        default=Path("exp/efficientpunct_tdnn"),
        help="TDNN folder: post/<split>/post.scp in, decode/ out",
    )
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=Path("exp/efficientpunct"),
        help="ensemble folder: decode/<split>.jsonl, alpha.json",
    )
    parser.add_argument("--dev-split", default="dev", help="split on which the alphas are chosen")
    parser.add_argument("--splits", default="dev,test", help="comma-separated splits to write")
    parser.add_argument("--alpha-step", type=float, default=0.1, help="alpha grid step over [0, 1]")
    add_alpha_rule_arguments(parser, "segments")  # one alpha per head
    parser.add_argument(
        "--first-word",
        choices=("auto",) + FIRST_WORD_RULES,
        default="auto",
        help="each segment's first word: scored and written as predicted (include) or not scored and "
        "copied from the reference (exclude); auto: the TDNN's training config",
    )
    return parser


def first_word_rule(choice: str, tdnn_dir: Path) -> str:
    """``choice``, or for auto the ``first_word`` of the TDNN's training config (its best-valid-f1.pt)."""
    if choice != "auto":
        return choice
    from punct.models.punct_tdnn.checkpoint import checkpoint_train_config

    ckpt = tdnn_dir / "best-valid-f1.pt"
    if not ckpt.is_file():
        raise FileNotFoundError(
            f"--first-word auto reads the TDNN's config from {ckpt}: no such file "
            f"(pass --first-word {'|'.join(FIRST_WORD_RULES)})"
        )
    return checkpoint_train_config(ckpt).first_word


def read_split(args: argparse.Namespace, split: str, first_word: str) -> SplitPosteriors:
    """One split's segments paired with their TDNN and text-model posteriors; the segments lacking one are
    logged."""
    segments = read_segments(args.segments_dir / f"{args.prefix}_supervisions_{split}.jsonl.gz")
    data = paired_split(
        segments, args.tdnn_dir / "post" / split / "post.scp", args.text_post_dir / split / "post.scp", first_word
    )
    if data.skipped:
        logging.warning(
            "%s: %d of %d segments lack a posterior and are left out of both rows (e.g. %s)",
            split,
            len(data.skipped),
            len(segments),
            data.skipped[0],
        )
    return data


def sweep_records(sweeps: dict[str, list[SweepPoint]]) -> dict[str, list[dict]]:
    """alpha.json's ``dev_sweep``: each head's scores at every alpha."""
    return {
        head: [
            {
                "alpha": p.alpha,
                "macro_f1": p.scores.macro_f1,
                "overall_f1": p.scores.overall["f1"],
                "per_class_f1": {c: p.scores.per_class[c]["f1"] for c in p.scores.classes[1:]},
            }
            for p in points
        ]
        for head, points in sweeps.items()
    }


def main(argv: list[str] | None = None) -> None:
    args = get_parser().parse_args(argv)
    setup_logging(args.out_dir / "log" / "ensemble.log")
    log_config(vars(args), "arguments")
    splits = [s for s in args.splits.split(",") if s]
    if args.dev_split not in splits:
        splits.insert(0, args.dev_split)
    first_word = first_word_rule(args.first_word, args.tdnn_dir)
    logging.info("first word of each segment: %s", first_word)
    data = {split: read_split(args, split, first_word) for split in splits}
    alphas = default_alphas(args.alpha_step)
    sweeps = head_sweeps(data[args.dev_split], alphas)
    choices = choose_head_alphas(data[args.dev_split], alphas, args.num_resamples, args.bootstrap_seed, args.alpha_rule)
    chosen = {head: choice.alpha for head, choice in choices.items()}
    for head, choice in choices.items():
        logging.info(
            "%s alpha chosen on %s: %.1f (%s)",
            head,
            args.dev_split,
            choice.alpha,
            choice.describe("the text model", "segments"),
        )
    for split in splits:
        write_predictions(
            args.tdnn_dir / "decode" / f"{split}.jsonl",
            data[split],
            head_predictions(data[split], {h: 1.0 for h in HEADS}),
        )
        write_predictions(
            args.out_dir / "decode" / f"{split}.jsonl", data[split], head_predictions(data[split], chosen)
        )
    summary = {
        "dev_split": args.dev_split,
        "first_word": first_word,
        "chosen_alpha": chosen,
        "selection_metric": {head: choice.metric for head, choice in choices.items()},
        "alpha_rule": {head: choice.to_dict() for head, choice in choices.items()},
        "dev_sweep": sweep_records(sweeps),
        "skipped": {split: len(d.skipped) for split, d in data.items()},
    }
    atomic_write_text(args.out_dir / "alpha.json", json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
