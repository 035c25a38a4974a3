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
ensemble at the chosen alpha and BERT only each minus Pause only, and TDNN minus BERT only.  Writes
<out-dir>/RESULTS.md, results.json, f1_vs_alpha.png and confusion-matrix PNGs (punct.results.punct_systems).
"""

from __future__ import annotations

import argparse
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from punct.io.shards import MatrixReader
from punct.labels import PUNCT4, WordLabels
from punct.results.facts import acoustic_model_health, parameter_breakdown
from punct.results.punct_systems import write_results
from punct.scoring.confusion import micro_f1
from punct.scoring.ensemble import (
    PAPER_ALPHA,
    add_alpha_rule_arguments,
    alpha_sweep,
    choose_alpha_by_rule,
    default_alphas,
    ensemble,
    paired_posteriors,
    utterance_confusions,
)
from punct.scoring.intervals import paired_difference
from punct.scoring.punct_scores import Coverage, coverage, score
from punct.utils.logging import log_config, setup_logging

PAUSE = "Pause only"  # the pause-only baseline's system name (punct.results.punct_systems.OPTIONAL_MODELS)


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


def manifest_words(path: Path) -> dict[str, int]:
    """Supervision id -> number of words, from a stage-0 supervision manifest."""
    from lhotse import load_manifest_lazy

    if not path.exists():
        raise FileNotFoundError(f"no such file: {path}")
    return {sup.id: len(WordLabels.words_of(sup)) for sup in load_manifest_lazy(path)}


def stage3_failures(path: Path) -> dict[str, str]:
    """Cut id -> reason of stage 3's ``<split>.failed`` (lines ``<cut id> <reason>: <detail>``); {} if absent."""
    if not path.is_file():
        return {}
    failures = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split(maxsplit=1)
        if fields:
            failures[fields[0]] = fields[1] if len(fields) > 1 else ""
    return failures


def cut_ids(path: Path) -> set[str] | None:
    """The ids of a cut manifest, or None if there is no such file."""
    if not path.is_file():
        return None
    from lhotse import load_manifest_lazy

    return {cut.id for cut in load_manifest_lazy(path)}


@dataclass
class StageOutputs:
    """The ids that each stage produced for a split, to tell why an utterance never reached scoring
    (None: that stage's output was not given, so it is not asked)."""

    feature_cuts: set[str] | None  # stage 1: <prefix>_cuts_<split>.jsonl.gz
    aligned_cuts: set[str]  # stage 3: <prefix>_cuts_<split>_ali.jsonl.gz
    am_embeddings: MatrixReader | None  # stage 4: emb.scp
    bert_vectors: MatrixReader | None  # stage 6: vec.scp
    bert_posteriors: MatrixReader  # stage 6: post.scp

    def reason(self, key: str) -> str:
        """The first stage that has no output for ``key``; else the TDNN posteriors (stage 8) lack it."""
        if self.feature_cuts is not None and key not in self.feature_cuts:
            return "without features at stage 1"
        if key not in self.aligned_cuts:
            return (
                "not aligned at stage 3" if self.feature_cuts is not None else "not in the aligned cuts (stage 1 or 3)"
            )
        if key not in self.bert_posteriors:
            return "without BERT posteriors at stage 6"
        if self.am_embeddings is not None and key not in self.am_embeddings:
            return "without layer-12 embeddings at stage 4"
        if self.bert_vectors is not None and key not in self.bert_vectors:
            return "without BERT word vectors at stage 6"
        return "without TDNN posteriors at stage 8"


def split_coverage(args: argparse.Namespace, split: str, refs: dict[str, np.ndarray], skipped: list[str]) -> Coverage:
    """What of the split was scored: against the stage-0 supervisions with --supervisions-dir (else the
    aligned cuts), with the reason each other utterance was dropped and stage 3's failure detail."""
    aligned = args.cuts_dir / f"{args.prefix}_cuts_{split}_ali.jsonl.gz"
    if args.supervisions_dir is not None:
        manifest = args.supervisions_dir / f"{args.prefix}_supervisions_{split}.jsonl.gz"
        words = manifest_words(manifest)
    else:
        manifest, words = aligned, {key: len(labels) for key, labels in refs.items()}
    am_scp = args.am_emb_dir / split / "emb.scp" if args.am_emb_dir is not None else None
    vec_scp = args.bert_emb_dir / split / "vec.scp"
    stages = StageOutputs(
        feature_cuts=cut_ids(args.cuts_dir / f"{args.prefix}_cuts_{split}.jsonl.gz"),
        aligned_cuts=set(refs),
        am_embeddings=MatrixReader(am_scp) if am_scp is not None and am_scp.is_file() else None,
        bert_vectors=MatrixReader(vec_scp) if vec_scp.is_file() else None,
        bert_posteriors=MatrixReader(args.bert_emb_dir / split / "post.scp"),
    )
    lost = set(skipped)
    scored = {key: len(labels) for key, labels in refs.items() if key not in lost}
    reasons = {key: stages.reason(key) for key in words if key not in scored}
    result = coverage(str(manifest), words, scored, reasons, stage3_failures(args.am_dir / "ali" / f"{split}.failed"))
    stage0 = args.supervisions_dir / f"{args.prefix}_skipped.json" if args.supervisions_dir is not None else None
    if stage0 is not None and stage0.is_file():  # written by punct.bin.prepare_mustc
        result.not_in_manifest = dict(json.loads(stage0.read_text(encoding="utf-8")).get(split, {}))
    return result


def references(cuts_path: Path) -> dict[str, np.ndarray]:
    from lhotse import CutSet

    if not cuts_path.exists():
        raise FileNotFoundError(f"no such file: {cuts_path}")
    refs = {}
    for cut in CutSet.from_file(cuts_path):
        refs[cut.id] = np.asarray(PUNCT4.encode(WordLabels.from_supervision(cut.supervisions[0], PUNCT4).punct))
    return refs


def read_split(args: argparse.Namespace, split: str):
    """One split's stacked references and posteriors ``(ref, p_tdnn, p_bert)``, the words of each scored
    utterance (in :func:`paired_posteriors`' order) and what was scored of the manifest (a dict)."""
    refs = references(args.cuts_dir / f"{args.prefix}_cuts_{split}_ali.jsonl.gz")
    tdnn_scp = args.tdnn_post_dir / split / "post.scp"
    bert_scp = args.bert_emb_dir / split / "post.scp"
    for path in (tdnn_scp, bert_scp):
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
    ref, pt, pb, skipped = paired_posteriors(tdnn_scp, bert_scp, refs)
    if skipped:
        logging.warning(
            "%s: %d of %d utterances lack a posterior and are not scored (e.g. %s)",
            split,
            len(skipped),
            len(refs),
            skipped[0],
        )
    lost = set(skipped)
    kept = [key for key in refs if key not in lost]  # paired_posteriors' order
    lengths = [len(refs[key]) for key in kept]
    scored = split_coverage(args, split, refs, skipped)
    if scored.words != len(ref):
        raise RuntimeError(f"{split}: {len(ref)} words stacked but {scored.words} counted as scored")
    logging.info("%s: %s (of %s)", split, scored.summary(), scored.manifest)
    pause = None
    if args.pause_dir is not None:
        pause = stacked_posteriors(args.pause_dir / split / "post.scp", kept, lengths, len(PUNCT4.classes))
    return (ref, pt, pb), pause, lengths, scored.to_dict()


def stacked_posteriors(scp: Path, keys: list[str], lengths: list[int], num_classes: int) -> np.ndarray:
    """The posteriors of ``keys`` (utterances of ``lengths`` words) stacked in that order; every key must be in
    ``scp`` with one row per word."""
    if not scp.exists():
        raise FileNotFoundError(f"no such file: {scp}")
    reader, rows = MatrixReader(scp), []
    for key, length in zip(keys, lengths):
        if key not in reader:
            raise ValueError(f"{scp}: no posteriors of {key}, which the other systems are scored on")
        matrix = reader[key]
        if matrix.shape != (length, num_classes):
            raise ValueError(f"{scp}: {key} has shape {matrix.shape}, expected ({length}, {num_classes})")
        rows.append(matrix)
    return np.concatenate(rows)


def chosen_name(alpha: float) -> str:
    return f"Ensemble (alpha={alpha:.1f}, chosen on dev)"


def system_predictions(
    data: tuple[np.ndarray, np.ndarray, np.ndarray], pause: np.ndarray | None, chosen: float, paper_alpha: float
) -> dict[str, np.ndarray]:
    """One split's argmax predictions by system name: BERT alone, the TDNN alone, the ensemble at the chosen and
    the paper's alpha, and (with its posteriors) the pause-only baseline."""
    _, pt, pb = data
    hyps = {
        "BERT only": pb.argmax(1),
        "TDNN": pt.argmax(1),
        chosen_name(chosen): ensemble(pt, pb, chosen).argmax(1),
        f"Ensemble (alpha={paper_alpha:.1f}, paper)": ensemble(pt, pb, paper_alpha).argmax(1),
    }
    if pause is not None:
        hyps[PAUSE] = pause.argmax(1)
    return hyps


def score_systems(hyps: dict[str, dict[str, np.ndarray]], refs: dict[str, np.ndarray], classes: list[str]) -> dict:
    """Per split, the scores of every system's predictions."""
    systems = {}
    for split, by_system in hyps.items():
        systems[split] = {name: score(refs[split], hyp, classes).to_dict() for name, hyp in by_system.items()}
        for name, s in systems[split].items():
            logging.info("%s %s: overall F1 %.4f", split, name, s["overall"]["f1"])
    return systems


def paired_comparisons(
    hyps: dict[str, dict[str, np.ndarray]],
    refs: dict[str, np.ndarray],
    lengths: dict[str, list[int]],
    num_classes: int,
    chosen: float,
    num_resamples: int,
    seed: int,
) -> dict:
    """Per split, overall F1 of a system minus a baseline's with a paired bootstrap 95 % interval over the
    utterances (the same resamples for both), for each pair whose two systems were scored."""
    pairs = [("TDNN", PAUSE), (chosen_name(chosen), PAUSE), ("BERT only", PAUSE), ("TDNN", "BERT only")]
    out = {
        "statistic": "overall F1",
        "unit": "utterances",
        "num_resamples": num_resamples,
        "seed": seed,
        "level": 0.95,
        "splits": {},
    }
    for split, by_system in hyps.items():
        rows = []
        for system, baseline in pairs:
            if system not in by_system or baseline not in by_system:
                continue
            a, b = (
                utterance_confusions(refs[split], by_system[name], lengths[split], num_classes)
                for name in (system, baseline)
            )
            point, low, high = paired_difference(a, b, micro_f1, num_resamples, seed)
            rows.append({"system": system, "baseline": baseline, "difference": point, "low": low, "high": high})
            logging.info("%s: %s minus %s: %+.4f (%+.4f, %+.4f)", split, system, baseline, point, low, high)
        out["splits"][split] = rows
    return out


def pause_model(pause_dir: Path | None) -> dict | None:
    """The pause-only classifier chosen on dev (``choice.json``'s "chosen"), or None without one."""
    choice = pause_dir / "choice.json" if pause_dir is not None else None
    if choice is None or not choice.is_file():
        return None
    return json.loads(choice.read_text(encoding="utf-8"))["chosen"]


def sweep_records(sweeps: dict, classes: list[str]) -> dict[str, list[dict]]:
    """Per split, the alpha sweep as results.json records it."""
    return {
        split: [
            {
                "alpha": p.alpha,
                "overall_f1": p.scores.overall["f1"],
                "macro_f1": p.scores.macro_f1,
                "per_class_f1": {c: p.scores.per_class[c]["f1"] for c in classes[1:]},
            }
            for p in points
        ]
        for split, points in sweeps.items()
    }


def main() -> None:
    args = get_parser().parse_args()
    setup_logging(args.out_dir / "log" / "score.log")
    log_config(vars(args), "arguments")
    classes = list(PUNCT4.classes)
    alphas = default_alphas(args.alpha_step)
    if not any(abs(a - args.paper_alpha) < 1e-9 for a in alphas):
        alphas = sorted(alphas + [args.paper_alpha])
    data, pause, lengths, splits = {}, {}, {}, {}
    for split in (args.dev_split, args.test_split):
        data[split], pause[split], lengths[split], splits[split] = read_split(args, split)
    sweeps = {split: alpha_sweep(*data[split], classes, alphas) for split in data}
    choice = choose_alpha_by_rule(
        args.alpha_rule, *data[args.dev_split], lengths[args.dev_split], alphas, args.num_resamples, args.bootstrap_seed
    )
    chosen = choice.alpha
    logging.info("alpha chosen on %s: %.1f (%s)", args.dev_split, chosen, choice.describe())
    hyps = {split: system_predictions(data[split], pause[split], chosen, args.paper_alpha) for split in data}
    refs = {split: data[split][0] for split in data}
    systems = score_systems(hyps, refs, classes)
    results = {
        "seed": args.seed,
        "classes": classes,
        "splits": splits,
        "chosen_alpha": chosen,
        "alpha_choice": choice.to_dict(),
        "paper_alpha": args.paper_alpha,
        "systems": systems,
        "alpha_sweep": sweep_records(sweeps, classes),
        "paired": paired_comparisons(
            hyps, refs, lengths, len(classes), chosen, args.num_resamples, args.bootstrap_seed
        ),
        "pause_model": pause_model(args.pause_dir),
        "parameters": parameter_breakdown(args.am_dir, args.bert_dir, args.tdnn_model),
        "acoustic_model": acoustic_model_health(args.am_dir, [args.dev_split, args.test_split]),
    }
    write_results(results, args.out_dir, plot=not args.no_plots)


if __name__ == "__main__":
    main()
