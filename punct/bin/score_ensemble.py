#!/usr/bin/env python3
"""Stage 8: score BERT-only, the punctuation TDNN and their ensemble; choose alpha on dev.

p = alpha * p_tdnn + (1 - alpha) * p_bert for alpha = 0.0, 0.1, ..., 1.0 on dev and test; alpha is
chosen on dev (--alpha-rule: paired-se, the dev argmax unless it is a mixture whose gain over the better
single model is within one standard error of the paired bootstrap difference; one-se, the marginal
one-standard-error rule; or argmax, the highest overall F1; punct.scoring.ensemble) and test is reported at the
chosen alpha and at the paper's 0.4; RESULTS.md names the dev argmax beside the chosen alpha.
References are the per-word labels (custom["punct"]) of the aligned cuts; every system is scored on
the same words (utterances that have both posteriors).  Per split, results.json ("splits") and
RESULTS.md say what was scored: the utterances and words of the stage-0 supervisions
(--supervisions-dir) that reached scoring, and for each other one the first stage without an output
for it (features, alignment with stage 3's reason, embeddings, posteriors).  With --pause-dir (the
pause-only baseline's posteriors, punct.bin.train_pause) a "Pause only" row is scored on the same words.
Paired comparisons ("paired" in results.json, a table in RESULTS.md): per split, the overall F1 of one system
minus another's with a paired bootstrap 95 % interval over the utterances (both scored on the same resamples,
--num-resamples and --bootstrap-seed as the alpha rule's; punct.scoring.intervals.paired_difference): TDNN, the
ensemble at the chosen alpha and BERT only each minus Pause only, and TDNN minus BERT only.  The scoring is
punct.scoring.systems.score_splits; the entry point adds the parameter counts and the AM's health
(punct.results.facts) and writes <out-dir>/RESULTS.md, results.json, f1_vs_alpha.png and confusion-matrix PNGs
(punct.results.punct_systems).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from punct.results.facts import acoustic_model_health, parameter_breakdown
from punct.results.punct_systems import write_results
from punct.scoring.ensemble import PAPER_ALPHA, add_alpha_rule_arguments
from punct.scoring.systems import (
    ScoringInputs,
    ScoringSettings,
    score_splits,
)
from punct.utils.config import options_as
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument(
        "--cuts-dir",
        type=Path,
        default=Path("data/fbank"),
        help="folder of <prefix>_cuts_<split>_ali.jsonl.gz (references)",
    )
    parser.add_argument("--prefix", required=True, help="manifest name prefix: <prefix>_cuts_<split>[_ali].jsonl.gz")
    parser.add_argument(
        "--bert-emb-dir", type=Path, default=Path("exp/emb_bert"), help="BERT posteriors: <dir>/<split>/post.scp"
    )
    parser.add_argument(
        "--tdnn-post-dir", type=Path, default=Path("exp/tdnn/post"), help="TDNN posteriors: <dir>/<split>/post.scp"
    )
    parser.add_argument(
        "--pause-dir",
        type=Path,
        default=None,
        help="the pause-only baseline (punct.bin.train_pause): <dir>/<split>/post.scp and <dir>/choice.json; "
        "a Pause only row and paired comparisons with it",
    )
    parser.add_argument("--dev-split", default="dev", help="split on which alpha is chosen")
    parser.add_argument("--test-split", default="test", help="split reported")
    parser.add_argument("--alpha-step", type=float, default=0.1, help="alpha grid step over [0, 1]")
    parser.add_argument("--paper-alpha", type=float, default=PAPER_ALPHA, help="the paper's alpha, also reported")
    add_alpha_rule_arguments(parser, "utterances")
    parser.add_argument("--am-dir", type=Path, default=Path("exp/am"), help="acoustic model folder (parameter count)")
    parser.add_argument(
        "--bert-dir", type=Path, default=Path("exp/bert"), help="fine-tuned BERT folder (parameter count)"
    )
    parser.add_argument(
        "--tdnn-model", type=Path, default=Path("exp/tdnn/best-valid-f1.pt"), help="TDNN checkpoint (parameter count)"
    )
    parser.add_argument("--out-dir", type=Path, default=Path("exp/results"), help="output folder")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    parser.add_argument(
        "--supervisions-dir",
        type=Path,
        default=None,
        help="stage-0 manifests (<prefix>_supervisions_<split>.jsonl.gz): count what was dropped before scoring",
    )
    parser.add_argument(
        "--am-emb-dir",
        type=Path,
        default=None,
        help="layer-12 shards (<dir>/<split>/emb.scp): names stage 4 when a cut lacks TDNN posteriors",
    )
    parser.add_argument("--seed", type=int, default=None, help="the run's seed, recorded in results.json")
    return parser


def main() -> None:
    args = get_parser().parse_args()
    setup_logging(args.out_dir / "log" / "score.log")
    log_config(vars(args), "arguments")
    results = score_splits(options_as(ScoringInputs, args), options_as(ScoringSettings, args))
    results["parameters"] = parameter_breakdown(args.am_dir, args.bert_dir, args.tdnn_model)
    results["acoustic_model"] = acoustic_model_health(args.am_dir, [args.dev_split, args.test_split])
    write_results(results, args.out_dir, plot=not args.no_plots)


if __name__ == "__main__":
    main()
