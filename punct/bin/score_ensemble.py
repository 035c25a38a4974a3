#!/usr/bin/env python3
"""Stage 8: score BERT-only, the punctuation TDNN and their ensemble; choose alpha on dev.

p = alpha * p_tdnn + (1 - alpha) * p_bert for alpha = 0.0, 0.1, ..., 1.0 on dev and test; alpha is
chosen on dev (highest overall F1) and test is reported at the chosen alpha and at the paper's 0.4.
References are the per-word labels (custom["punct"]) of the aligned cuts; every system is scored on
the same words (utterances that have both posteriors).  Writes <out-dir>/RESULTS.md, results.json,
f1_vs_alpha.png and confusion-matrix PNGs (punct.report).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Dict, List

import numpy as np

from punct.ensemble import PAPER_ALPHA, alpha_sweep, choose_alpha, default_alphas, ensemble, paired_posteriors
from punct.metrics import score
from punct.report import parameter_breakdown, scored_summary, write_results
from punct.text.labels import MUSTC_CLASSES, encode_labels
from punct.utils.logging import log_config, setup_logging


def get_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--cuts-dir", type=Path, default=Path("data/fbank"), help="folder of mustc_cuts_<split>_ali.jsonl.gz (references)")
    parser.add_argument("--bert-emb-dir", type=Path, default=Path("exp/emb_bert"), help="BERT posteriors: <dir>/<split>/post.scp")
    parser.add_argument("--tdnn-post-dir", type=Path, default=Path("exp/tdnn/post"), help="TDNN posteriors: <dir>/<split>/post.scp")
    parser.add_argument("--dev-split", default="dev", help="split on which alpha is chosen")
    parser.add_argument("--test-split", default="test", help="split reported")
    parser.add_argument("--alpha-step", type=float, default=0.1, help="alpha grid step over [0, 1]")
    parser.add_argument("--paper-alpha", type=float, default=PAPER_ALPHA, help="the paper's alpha, also reported")
    parser.add_argument("--am-dir", type=Path, default=Path("exp/am"), help="acoustic model folder (parameter count)")
    parser.add_argument("--bert-dir", type=Path, default=Path("exp/bert"), help="fine-tuned BERT folder (parameter count)")
    parser.add_argument("--tdnn-model", type=Path, default=Path("exp/tdnn/best-valid-f1.pt"), help="TDNN checkpoint (parameter count)")
    parser.add_argument("--out-dir", type=Path, default=Path("exp/results"), help="output folder")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNGs")
    parser.add_argument("--supervisions-dir", type=Path, default=None,
                        help="stage-0 manifests (mustc_supervisions_<split>.jsonl.gz): count what was dropped before scoring")
    parser.add_argument("--seed", type=int, default=None, help="the run's seed, recorded in results.json")
    return parser


def manifest_words(path: Path) -> Dict[str, int]:
    """Supervision id -> number of words, from a stage-0 supervision manifest."""
    from lhotse import load_manifest_lazy

    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    return {sup.id: len((sup.custom or {}).get("words", [])) for sup in load_manifest_lazy(path)}


def acoustic_model_health(am_dir: Path, splits: List[str]) -> Dict[str, Dict[str, float]]:
    """The AM's greedy WER (``wer_<split>.txt``) and forced-alignment word-start error against the
    synthesizer (``ali/<split>.ali_error.json``, mini corpus only) where stages 2-3 wrote them."""
    import json
    import re

    health: Dict[str, Dict[str, float]] = {}
    for split in splits:
        wer_file, ali_file = am_dir / f"wer_{split}.txt", am_dir / "ali" / f"{split}.ali_error.json"
        if wer_file.exists():
            match = re.search(r"%WER ([0-9.]+)", wer_file.read_text(encoding="utf-8"))
            if match:
                health.setdefault("wer", {})[split] = float(match.group(1))
        if ali_file.exists():
            ali = json.loads(ali_file.read_text(encoding="utf-8"))
            if "median_abs_ms" in ali:
                health.setdefault("alignment_median_ms", {})[split] = ali["median_abs_ms"]
    return health


def dropped_counts(manifest: Dict[str, int], refs: Dict[str, np.ndarray], skipped: List[str]) -> Dict[str, int]:
    """What the manifest had, and what never reached scoring: cuts without an alignment (not in the
    aligned cuts) and aligned cuts without posteriors."""
    not_aligned = [key for key in manifest if key not in refs]
    return {
        "manifest_utterances": len(manifest),
        "manifest_words": int(sum(manifest.values())),
        "not_aligned": len(not_aligned),
        "not_aligned_words": int(sum(manifest[key] for key in not_aligned)),
        "skipped_words": int(sum(len(refs[key]) for key in skipped)),
    }


def references(cuts_path: Path) -> Dict[str, np.ndarray]:
    from lhotse import CutSet

    if not cuts_path.exists():
        raise FileNotFoundError(f"no such file: {cuts_path}")
    refs = {}
    for cut in CutSet.from_file(cuts_path):
        refs[cut.id] = np.asarray(encode_labels(cut.supervisions[0].custom["punct"], MUSTC_CLASSES))
    return refs


def main() -> None:
    args = get_parser().parse_args()
    setup_logging(args.out_dir / "log" / "score.log")
    log_config(vars(args), "arguments")
    classes = list(MUSTC_CLASSES)
    alphas = default_alphas(args.alpha_step)
    if not any(abs(a - args.paper_alpha) < 1e-9 for a in alphas):
        alphas = sorted(alphas + [args.paper_alpha])
    data, splits = {}, {}
    for split in (args.dev_split, args.test_split):
        refs = references(args.cuts_dir / f"mustc_cuts_{split}_ali.jsonl.gz")
        tdnn_scp = args.tdnn_post_dir / split / "post.scp"
        bert_scp = args.bert_emb_dir / split / "post.scp"
        for path in (tdnn_scp, bert_scp):
            if not path.exists():
                raise FileNotFoundError(f"no such file: {path}")
        ref, pt, pb, skipped = paired_posteriors(tdnn_scp, bert_scp, refs)
        if skipped:
            logging.warning("%s: %d of %d utterances lack a posterior and are not scored (e.g. %s)", split, len(skipped), len(refs), skipped[0])
        data[split] = (ref, pt, pb)
        splits[split] = {"utterances": len(refs) - len(skipped), "words": int(len(ref)), "skipped": len(skipped)}
        if args.supervisions_dir is not None:
            manifest = manifest_words(args.supervisions_dir / f"mustc_supervisions_{split}.jsonl.gz")
            splits[split].update(dropped_counts(manifest, refs, skipped))
            logging.info("%s: %s", split, scored_summary(splits[split]))
    sweeps = {split: alpha_sweep(*data[split], classes, alphas) for split in data}
    chosen = choose_alpha(sweeps[args.dev_split])
    logging.info("alpha chosen on %s: %.1f", args.dev_split, chosen)
    systems = {}
    for split, (ref, pt, pb) in data.items():
        systems[split] = {
            "BERT only": score(ref, pb.argmax(1), classes).to_dict(),
            "TDNN": score(ref, pt.argmax(1), classes).to_dict(),
            f"Ensemble (alpha={chosen:.1f}, chosen on dev)": score(ref, ensemble(pt, pb, chosen).argmax(1), classes).to_dict(),
            f"Ensemble (alpha={args.paper_alpha:.1f}, paper)": score(ref, ensemble(pt, pb, args.paper_alpha).argmax(1), classes).to_dict(),
        }
        for name, s in systems[split].items():
            logging.info("%s %s: overall F1 %.4f", split, name, s["overall"]["f1"])
    results = {
        "seed": args.seed,
        "classes": classes,
        "splits": splits,
        "chosen_alpha": chosen,
        "paper_alpha": args.paper_alpha,
        "systems": systems,
        "alpha_sweep": {
            split: [
                {"alpha": p.alpha, "overall_f1": p.scores.overall["f1"], "macro_f1": p.scores.macro_f1,
                 "per_class_f1": {c: p.scores.per_class[c]["f1"] for c in classes[1:]}}
                for p in points
            ]
            for split, points in sweeps.items()
        },
        "parameters": parameter_breakdown(args.am_dir, args.bert_dir, args.tdnn_model),
        "acoustic_model": acoustic_model_health(args.am_dir, [args.dev_split, args.test_split]),
    }
    write_results(results, args.out_dir, plot=not args.no_plots)


if __name__ == "__main__":
    main()
