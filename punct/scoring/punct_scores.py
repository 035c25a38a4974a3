"""Word-level punctuation scores: per-class precision/recall/F1, overall micro and macro F1, and what was scored.

Every word has one reference and one predicted class; class 0 (``blank``, "NP" for punct4) is "no
punctuation".  The numbers are those of the confusion-count core (:mod:`punct.scoring.confusion`):
``per_class`` = :func:`~punct.scoring.confusion.class_scores`, ``overall`` = the micro-average over the marks
(:func:`~punct.scoring.confusion.micro_scores`; EfficientPunct's "overall"), ``macro_f1`` = the unweighted mean
of the marks' F1 (the thesis' summary for 9 classes; Huang et al.'s "overall").
Scores are written as a markdown table (percent) and JSON (fractions), with the confusion
matrix (rows = reference, columns = prediction) and, given a ``Coverage``, what was scored: the
utterances and words of the reference manifest that reached scoring, and why the others did not.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from lhotse.utils import Pathlike

from punct.scoring.confusion import class_scores, confusion_matrix, macro_f1, micro_scores
from punct.utils.atomic import atomic_write_text


@dataclass
class PunctScores:
    classes: list[str]
    confusion: np.ndarray
    per_class: dict[str, dict[str, float]] = field(default_factory=dict)
    overall: dict[str, float] = field(default_factory=dict)
    macro_f1: float = 0.0

    @property
    def num_words(self) -> int:
        return int(self.confusion.sum())

    def to_dict(self) -> dict:
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
            lines.append(
                f"| {name} | {100 * s['precision']:.1f} | {100 * s['recall']:.1f} | {100 * s['f1']:.1f} "
                f"| {s['support']} |"
            )
        o = self.overall
        lines.append(
            f"| overall (micro) | {100 * o['precision']:.1f} | {100 * o['recall']:.1f} | {100 * o['f1']:.1f} "
            f"| {o['support']} |"
        )
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
    p, r, f = class_scores(cm)
    per_class = {name: _entry(p[c], r[c], f[c], cm[c, :].sum()) for c, name in enumerate(classes)}
    overall = _entry(*micro_scores(cm), cm[1:, :].sum())
    return PunctScores(list(classes), cm, per_class, overall, float(macro_f1(cm)))


def _entry(precision: float, recall: float, f1: float, support: int) -> dict[str, float]:
    return {"precision": float(precision), "recall": float(recall), "f1": float(f1), "support": int(support)}


@dataclass
class Dropped:
    """The utterances and words that one reason kept from scoring."""

    utterances: int = 0
    words: int = 0


@dataclass
class Coverage:
    """What a score covers: of the utterances (and words) listed in ``manifest``, those scored, and
    those dropped before scoring by reason (``dropped_ids``: utterance id -> reason with detail)."""

    manifest: str
    manifest_utterances: int
    manifest_words: int
    utterances: int
    words: int
    dropped: dict[str, Dropped] = field(default_factory=dict)
    dropped_ids: dict[str, str] = field(default_factory=dict)
    words_differ: int = 0  # scored utterances whose word count differs from the manifest's
    # segments stage 0 left out of the manifest, by reason (e.g. unspeakable_token: punct.text.numbers)
    not_in_manifest: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """ "56 of 57 utterances (1491 of 1543 words) scored; dropped: 1 not aligned at stage 3 (52 words)"."""
        text = (
            f"{self.utterances} of {self.manifest_utterances} utterances ({self.words} of "
            f"{self.manifest_words} words) scored"
        )
        dropped = [f"{d.utterances} {reason} ({d.words} words)" for reason, d in self.dropped.items()]
        text += "; dropped: " + (", ".join(dropped) if dropped else "none")
        if self.words_differ:
            text += f"; {self.words_differ} scored utterance(s) have another word count than the manifest"
        skipped = [f"{n} {reason.replace('_', ' ')}" for reason, n in sorted(self.not_in_manifest.items()) if n]
        if skipped:
            text += "; left out of the manifest at stage 0: " + ", ".join(skipped)
        return text

    def to_dict(self) -> dict:
        data = asdict(self)
        data["dropped"] = {reason: asdict(d) for reason, d in self.dropped.items()}
        return data

    @staticmethod
    def from_dict(data: Mapping) -> Coverage:
        fields = dict(data)
        fields["dropped"] = {reason: Dropped(**d) for reason, d in data.get("dropped", {}).items()}
        return Coverage(**fields)


def coverage(
    manifest: str,
    manifest_words: Mapping[str, int],
    scored_words: Mapping[str, int],
    reasons: Mapping[str, str] | None = None,
    details: Mapping[str, str] | None = None,
    default_reason: str = "not scored",
) -> Coverage:
    """Compares the utterances of a reference manifest (id -> number of words) with those scored
    (id -> number of words scored).  An unscored utterance is counted under ``reasons[id]``
    (``default_reason`` when absent) and listed with ``details[id]``; a scored id that the manifest
    lacks is an error."""
    unknown = [key for key in scored_words if key not in manifest_words]
    if unknown:
        raise ValueError(
            f"{len(unknown)} scored utterance(s) are not in {manifest} (e.g. {unknown[0]}): "
            "do the cut ids match the supervision ids?"
        )
    reasons, details = reasons or {}, details or {}
    dropped: dict[str, Dropped] = {}
    dropped_ids: dict[str, str] = {}
    for key, num_words in manifest_words.items():
        if key in scored_words:
            continue
        reason = reasons.get(key, default_reason)
        entry = dropped.setdefault(reason, Dropped())
        entry.utterances += 1
        entry.words += int(num_words)
        dropped_ids[key] = f"{reason}: {details[key]}" if details.get(key) else reason
    return Coverage(
        manifest=manifest,
        manifest_utterances=len(manifest_words),
        manifest_words=int(sum(manifest_words.values())),
        utterances=len(scored_words),
        words=int(sum(scored_words.values())),
        dropped=dropped,
        dropped_ids=dropped_ids,
        words_differ=sum(1 for key, n in scored_words.items() if n != manifest_words[key]),
    )


def write_scores(scores: PunctScores, prefix: Pathlike, title: str = "", scored: Coverage | None = None) -> None:
    """Writes ``<prefix>.md`` and ``<prefix>.json`` atomically; ``scored`` says what the scores cover."""
    prefix = Path(prefix)
    markdown, data = scores.to_markdown(title), scores.to_dict()
    if scored is not None:
        data["coverage"] = scored.to_dict()
        head, sep, rest = markdown.partition("\n\n") if title else ("", "", markdown)
        line = f"Coverage ({scored.manifest}): {scored.summary()}."
        markdown = f"{head}{sep}{line}\n\n{rest}"
    atomic_write_text(prefix.with_name(prefix.name + ".md"), markdown)
    atomic_write_text(prefix.with_name(prefix.name + ".json"), json.dumps(data, indent=2) + "\n")
