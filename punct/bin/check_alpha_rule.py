#!/usr/bin/env python3
"""Checks stage 8's ensemble-weight rules on dev alone (punct.scoring.alpha_check: leave one talk out).

python -m punct.bin.check_alpha_rule --prefix mustc --out exp/alpha_check.json \\
    ../mustc_seed1 ../mustc_seed2 ../mustc_seed3

Each argument is a finished egs/mustc run (its data/fbank/<prefix>_cuts_<split>_ali.jsonl.gz, exp/tdnn/post and
exp/emb_bert); per run and rule, the pooled F1 of the talks each predicted with the alpha chosen without it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
from pathlib import Path

from punct.labels import PUNCT4
from punct.scoring.alpha_check import leave_one_talk_out
from punct.scoring.ensemble import ALPHA_RULES, default_alphas, paired_posteriors
from punct.scoring.systems import references
from punct.utils.atomic import atomic_write_text
from punct.utils.logging import setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("runs", type=Path, nargs="+", help="finished stage-8 run folders of a punct4 recipe")
    parser.add_argument("--split", default="dev", help="the split the rules are checked on (never test)")
    parser.add_argument("--prefix", required=True, help="manifest name prefix of the runs (e.g. mustc)")
    parser.add_argument("--rules", nargs="+", default=list(ALPHA_RULES), choices=ALPHA_RULES)
    parser.add_argument("--num-resamples", type=int, default=1000, help="bootstrap resamples of the SE rules")
    parser.add_argument("--out", type=Path, required=True, help="JSON of the check")
    return parser


def check_run(run: Path, args: argparse.Namespace) -> dict:
    with contextlib.chdir(run):  # the scp files name their archives relative to the run folder
        refs = references(Path("data") / "fbank" / f"{args.prefix}_cuts_{args.split}_ali.jsonl.gz")
        tdnn, bert = (Path("exp") / d / args.split / "post.scp" for d in ("tdnn/post", "emb_bert"))
        ref, p_tdnn, p_bert, skipped = paired_posteriors(tdnn, bert, refs)
    ids = [key for key in refs if key not in set(skipped)]
    check = leave_one_talk_out(
        ref,
        p_tdnn,
        p_bert,
        ids,
        [len(refs[key]) for key in ids],
        PUNCT4.classes,
        args.rules,
        default_alphas(0.1),
        num_resamples=args.num_resamples,
    )
    logging.info("%s: %s", run, ", ".join(f"{k} {100 * v:.1f}" for k, v in check.f1.items()))
    return {"run": str(run), "f1": check.f1, "chosen": check.chosen, "talks": check.talks, "skipped": len(skipped)}


def main() -> None:
    args = get_parser().parse_args()
    setup_logging(None)
    if args.split == "test":
        raise SystemExit("check_alpha_rule: rules are checked on dev; the test set is scored once, by stage 8")
    checks = [check_run(run, args) for run in args.runs]
    names = list(checks[0]["f1"])
    print("| run | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for c in checks:
        print(f"| {c['run']} | " + " | ".join(f"{100 * c['f1'][n]:.1f}" for n in names) + " |")
    atomic_write_text(args.out, json.dumps({"split": args.split, "runs": checks}, indent=1) + "\n")


if __name__ == "__main__":
    main()
