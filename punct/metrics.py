"""Word-level punctuation scores: per-class precision/recall/F1, overall micro and macro F1.

Conventions (EfficientPunct, Huang et al. 2021, Stankov 2024):
* every word has one reference and one predicted class; class 0 (``blank``, "NP" for
  MuST-C) is "no punctuation" and is not a mark;
* per class c: TP = ref c & hyp c, precision = TP / #hyp c, recall = TP / #ref c,
  F1 = 2PR / (P + R) (0 when undefined);
* ``overall`` = micro-average over the mark classes (blank excluded): TP summed over marks,
  precision over all words predicted as some mark, recall over all words whose reference
  is some mark; a comma predicted as a full stop is a false positive of "." and a false
  negative of ",";
* ``macro`` F1 = unweighted mean of the marks' F1 (the thesis' summary for 9 classes).
Scores are written as a markdown table (percent) and JSON (fractions), with the confusion
matrix (rows = reference, columns = prediction).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Sequence, Union

import numpy as np

from punct.utils.atomic import atomic_write_text

Pathlike = Union[str, Path]


def confusion_matrix(ref: Sequence[int], hyp: Sequence[int], num_classes: int) -> np.ndarray:
    """(C, C) counts, rows = reference class, columns = predicted class."""
    ref = np.asarray(ref, dtype=np.int64)
    hyp = np.asarray(hyp, dtype=np.int64)
    if ref.shape != hyp.shape:
        raise ValueError(f"reference and prediction differ in length: {ref.shape} vs {hyp.shape}")
    for name, a in (("reference", ref), ("prediction", hyp)):
        if a.size and (a.min() < 0 or a.max() >= num_classes):
            raise ValueError(f"{name} class ids must be in 0..{num_classes - 1}")
    counts = np.zeros((num_classes, num_classes), dtype=np.int64)
    np.add.at(counts, (ref, hyp), 1)
    return counts


def _prf(tp: int, num_hyp: int, num_ref: int) -> Dict[str, float]:
    p = tp / num_hyp if num_hyp else 0.0
    r = tp / num_ref if num_ref else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f, "support": int(num_ref)}


@dataclass
class PunctScores:
    classes: List[str]
    confusion: np.ndarray
    per_class: Dict[str, Dict[str, float]] = field(default_factory=dict)
    overall: Dict[str, float] = field(default_factory=dict)
    macro_f1: float = 0.0

    @property
    def num_words(self) -> int:
        return int(self.confusion.sum())

    def to_dict(self) -> Dict:
        return {
            "classes": list(self.classes),
            "num_words": self.num_words,
            "per_class": self.per_class,
            "overall": self.overall,
            "macro_f1": self.macro_f1,
            "confusion": self.confusion.tolist(),
        }

    def to_markdown(self, title: str = "") -> str:
        lines = [f"### {title}", ""] if title else []
        lines += ["| class | precision | recall | F1 | support |", "|---|---:|---:|---:|---:|"]
        for name in self.classes[1:]:
            s = self.per_class[name]
            lines.append(f"| {name} | {100 * s['precision']:.1f} | {100 * s['recall']:.1f} | {100 * s['f1']:.1f} | {s['support']} |")
        o = self.overall
        lines.append(f"| overall (micro) | {100 * o['precision']:.1f} | {100 * o['recall']:.1f} | {100 * o['f1']:.1f} | {o['support']} |")
        lines.append(f"| macro F1 | | | {100 * self.macro_f1:.1f} | |")
        lines += ["", f"Confusion matrix ({self.num_words} words; rows = reference, columns = prediction):", ""]
        lines.append("| ref \\ hyp | " + " | ".join(self.classes) + " |")
        lines.append("|---|" + "---:|" * len(self.classes))
        for name, row in zip(self.classes, self.confusion):
            lines.append(f"| {name} | " + " | ".join(str(int(x)) for x in row) + " |")
        return "\n".join(lines) + "\n"


def score(ref: Sequence[int], hyp: Sequence[int], classes: Sequence[str]) -> PunctScores:
    """Scores class-id sequences; ``classes[0]`` is the blank (no-punctuation) class."""
    if len(classes) < 2:
        raise ValueError(f"need a blank class and at least one mark, got {list(classes)}")
    cm = confusion_matrix(ref, hyp, len(classes))
    per_class = {}
    for c, name in enumerate(classes):
        per_class[name] = _prf(int(cm[c, c]), int(cm[:, c].sum()), int(cm[c, :].sum()))
    marks = range(1, len(classes))
    tp = sum(int(cm[c, c]) for c in marks)
    overall = _prf(tp, int(cm[:, 1:].sum()), int(cm[1:, :].sum()))
    macro = float(np.mean([per_class[classes[c]]["f1"] for c in marks]))
    return PunctScores(list(classes), cm, per_class, overall, macro)


def write_scores(scores: PunctScores, prefix: Pathlike, title: str = "") -> None:
    """Writes ``<prefix>.md`` and ``<prefix>.json`` atomically."""
    prefix = Path(prefix)
    atomic_write_text(prefix.with_name(prefix.name + ".md"), scores.to_markdown(title))
    atomic_write_text(prefix.with_name(prefix.name + ".json"), json.dumps(scores.to_dict(), indent=2) + "\n")
