"""The systems of a punct4 recipe's scoring stage (egs/mustc stage 8) scored on dev and test.

BERT only, the punctuation TDNN, their ensemble p = alpha * p_tdnn + (1 - alpha) * p_bert (alpha chosen on dev by
a rule of :mod:`punct.scoring.ensemble`, test reported at the chosen alpha and at the paper's) and, with its
posteriors, the pause-only baseline, all scored on the same words: the per-word labels (``custom["punct"]``) of the
aligned cuts of utterances that have every system's posteriors.  :func:`score_splits` returns what
``results.json`` records of them: per split what was scored of the stage-0 supervisions and, for each other
utterance, the first stage without an output for it (:class:`StageOutputs`); every system's scores; the alpha
sweep; and the paired bootstrap differences of overall F1 (:func:`paired_comparisons`).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from punct.io.shards import MatrixReader
from punct.labels import PUNCT4, WordLabels
from punct.scoring.confusion import micro_f1
from punct.scoring.ensemble import (
    PAPER_ALPHA,
    alpha_sweep,
    choose_alpha_by_rule,
    default_alphas,
    ensemble,
    paired_posteriors,
    utterance_confusions,
)
from punct.scoring.intervals import paired_difference
from punct.scoring.punct_scores import Coverage, coverage, score

PAUSE = "Pause only"  # the pause-only baseline's system name (punct.results.punct_systems.OPTIONAL_MODELS)


@dataclass
class ScoringInputs:
    """Where each split's references and posteriors are read (``<prefix>_cuts_<split>_ali.jsonl.gz`` in
    ``cuts_dir``, ``<dir>/<split>/post.scp``), and what tells why an utterance never reached scoring."""

    prefix: str
    cuts_dir: Path  # <prefix>_cuts_<split>.jsonl.gz (stage 1) and <prefix>_cuts_<split>_ali.jsonl.gz (stage 3)
    bert_emb_dir: Path  # BERT posteriors and word vectors: <dir>/<split>/{post,vec}.scp
    tdnn_post_dir: Path  # TDNN posteriors: <dir>/<split>/post.scp
    am_dir: Path  # stage 3's failures: <dir>/ali/<split>.failed
    pause_dir: Path | None = None  # the pause-only baseline: <dir>/<split>/post.scp and <dir>/choice.json
    supervisions_dir: Path | None = None  # stage 0: <prefix>_supervisions_<split>.jsonl.gz, <prefix>_skipped.json
    am_emb_dir: Path | None = None  # stage 4: <dir>/<split>/emb.scp


@dataclass
class ScoringSettings:
    """The splits, the alpha grid and rule, and the bootstrap of the paired comparisons."""

    dev_split: str = "dev"  # alpha is chosen on it
    test_split: str = "test"
    alpha_step: float = 0.1  # the grid over [0, 1]; the paper's alpha is added when off it
    paper_alpha: float = PAPER_ALPHA
    alpha_rule: str = "paired-se"  # punct.scoring.ensemble.ALPHA_RULES
    num_resamples: int = 1000
    bootstrap_seed: int = 42
    seed: int | None = None  # the run's seed, recorded


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


def split_coverage(inputs: ScoringInputs, split: str, refs: dict[str, np.ndarray], skipped: list[str]) -> Coverage:
    """What of the split was scored: against the stage-0 supervisions with --supervisions-dir (else the
    aligned cuts), with the reason each other utterance was dropped and stage 3's failure detail."""
    aligned = inputs.cuts_dir / f"{inputs.prefix}_cuts_{split}_ali.jsonl.gz"
    if inputs.supervisions_dir is not None:
        manifest = inputs.supervisions_dir / f"{inputs.prefix}_supervisions_{split}.jsonl.gz"
        words = manifest_words(manifest)
    else:
        manifest, words = aligned, {key: len(labels) for key, labels in refs.items()}
    am_scp = inputs.am_emb_dir / split / "emb.scp" if inputs.am_emb_dir is not None else None
    vec_scp = inputs.bert_emb_dir / split / "vec.scp"
    stages = StageOutputs(
        feature_cuts=cut_ids(inputs.cuts_dir / f"{inputs.prefix}_cuts_{split}.jsonl.gz"),
        aligned_cuts=set(refs),
        am_embeddings=MatrixReader(am_scp) if am_scp is not None and am_scp.is_file() else None,
        bert_vectors=MatrixReader(vec_scp) if vec_scp.is_file() else None,
        bert_posteriors=MatrixReader(inputs.bert_emb_dir / split / "post.scp"),
    )
    lost = set(skipped)
    scored = {key: len(labels) for key, labels in refs.items() if key not in lost}
    reasons = {key: stages.reason(key) for key in words if key not in scored}
    result = coverage(str(manifest), words, scored, reasons, stage3_failures(inputs.am_dir / "ali" / f"{split}.failed"))
    stage0 = inputs.supervisions_dir / f"{inputs.prefix}_skipped.json" if inputs.supervisions_dir is not None else None
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


def read_split(inputs: ScoringInputs, split: str):
    """One split's stacked references and posteriors ``(ref, p_tdnn, p_bert)``, the words of each scored
    utterance (in :func:`paired_posteriors`' order) and what was scored of the manifest (a dict)."""
    refs = references(inputs.cuts_dir / f"{inputs.prefix}_cuts_{split}_ali.jsonl.gz")
    tdnn_scp = inputs.tdnn_post_dir / split / "post.scp"
    bert_scp = inputs.bert_emb_dir / split / "post.scp"
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
    scored = split_coverage(inputs, split, refs, skipped)
    if scored.words != len(ref):
        raise RuntimeError(f"{split}: {len(ref)} words stacked but {scored.words} counted as scored")
    logging.info("%s: %s (of %s)", split, scored.summary(), scored.manifest)
    pause = None
    if inputs.pause_dir is not None:
        pause = stacked_posteriors(inputs.pause_dir / split / "post.scp", kept, lengths, len(PUNCT4.classes))
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


def alpha_grid(step: float, paper_alpha: float) -> list[float]:
    """0, step, ..., 1, with the paper's alpha added where the grid misses it."""
    alphas = default_alphas(step)
    if not any(abs(a - paper_alpha) < 1e-9 for a in alphas):
        alphas = sorted(alphas + [paper_alpha])
    return alphas


def score_splits(inputs: ScoringInputs, settings: ScoringSettings) -> dict:
    """Every system scored on dev and test with alpha chosen on dev: what ``results.json`` records of them
    (the run's seed, classes, per split what was scored, the alpha and its choice, the systems' scores, the
    alpha sweep, the paired comparisons and the pause-only classifier)."""
    classes = list(PUNCT4.classes)
    alphas = alpha_grid(settings.alpha_step, settings.paper_alpha)
    data, pause, lengths, splits = {}, {}, {}, {}
    for split in (settings.dev_split, settings.test_split):
        data[split], pause[split], lengths[split], splits[split] = read_split(inputs, split)
    sweeps = {split: alpha_sweep(*data[split], classes, alphas) for split in data}
    dev = settings.dev_split
    choice = choose_alpha_by_rule(
        settings.alpha_rule, *data[dev], lengths[dev], alphas, settings.num_resamples, settings.bootstrap_seed
    )
    chosen = choice.alpha
    logging.info("alpha chosen on %s: %.1f (%s)", dev, chosen, choice.describe())
    hyps = {split: system_predictions(data[split], pause[split], chosen, settings.paper_alpha) for split in data}
    refs = {split: data[split][0] for split in data}
    return {
        "seed": settings.seed,
        "classes": classes,
        "splits": splits,
        "chosen_alpha": chosen,
        "alpha_choice": choice.to_dict(),
        "paper_alpha": settings.paper_alpha,
        "systems": score_systems(hyps, refs, classes),
        "alpha_sweep": sweep_records(sweeps, classes),
        "paired": paired_comparisons(
            hyps, refs, lengths, len(classes), chosen, settings.num_resamples, settings.bootstrap_seed
        ),
        "pause_model": pause_model(inputs.pause_dir),
    }
