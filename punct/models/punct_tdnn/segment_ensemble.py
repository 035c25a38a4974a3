"""EfficientPunct on segments with punct9 + case labels: the two-head ensemble and the scoring-format predictions.

Both sides give per-word posteriors with the same column blocks: the punctuation softmax in
``PUNCT9.classes`` order, then the case softmax in ``CASE.classes`` order (the TDNN with a case head,
``punct.bin.decode_tdnn``; the text-only model, ``punct.bin.dump_itn_text``).  Per head,
``p = alpha * p_tdnn + (1 - alpha) * p_text``, with each head's alpha chosen on dev by its own statistic
(punctuation: macro F1 over the 8 marks; case: [cap] F1) and one of the rules of
:mod:`punct.scoring.ensemble` (``ALPHA_RULES``, ``rule`` of :func:`choose_head_alphas`):

* ``paired-se`` (the default, as egs/mustc's stage 8): the dev argmax, unless it is a mixture whose gain over
  the better single model (the TDNN alone or the text model alone) is within one standard error of the
  paired bootstrap difference over the dev segments (both on the same resamples); then that single model.
* ``one-se`` (the rule before): a mixture only if it beats both single models by more than the *marginal*
  bootstrap standard error of its dev score, which counts the spread of the segments' difficulty that both
  models share, and so collapses the mixture to a single model even where it is better on every segment.
* ``argmax``: the highest dev score (ties: the smallest alpha).

Predictions are written as ``decode/<split>.jsonl`` lines read by :mod:`punct.scoring.itn`.

``first_word`` (:mod:`punct.labels`): with ``exclude`` (as the thesis) the alphas are chosen on the words after
each segment's first, and the written predictions of the first word are its reference labels.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from lhotse.utils import Pathlike

from punct.io.shards import MatrixReader
from punct.labels import CAP, CASE, PUNCT9, check_first_word, copy_first_word, scored_mask
from punct.models.cross_attention.data import ItnSegment
from punct.scoring import confusion
from punct.scoring.ensemble import AlphaChoice, SweepPoint, alpha_sweep, choose_alpha_by_rule, ensemble
from punct.utils.atomic import atomic_write_text

Statistic = Callable[[np.ndarray], np.ndarray]  # (..., C, C) summed confusion matrices -> (...)


def cap_f1(cm: np.ndarray) -> np.ndarray:
    return confusion.class_f1(cm)[..., CASE.classes.index(CAP)]


# head -> (classes, first column, dev selection statistic, its name)
HEADS: dict[str, tuple[tuple[str, ...], int, Statistic, str]] = {
    "punct": (tuple(PUNCT9.classes), 0, confusion.macro_f1, "macro F1 (8 marks)"),
    "case": (tuple(CASE.classes), len(PUNCT9.classes), cap_f1, "[cap] F1"),
}
NUM_COLUMNS = len(PUNCT9.classes) + len(CASE.classes)


@dataclass
class SplitPosteriors:
    """Segments that have both posteriors, with their stacked references and posteriors, and the
    first-word rule they are scored and written under."""

    segments: list[ItnSegment]
    p_tdnn: np.ndarray  # (N words, 11)
    p_text: np.ndarray  # (N words, 11)
    skipped: list[str]
    first_word: str = "include"

    def reference(self, head: str) -> np.ndarray:
        return np.concatenate([np.asarray(getattr(s, head), dtype=np.int64) for s in self.segments])

    def scored(self) -> np.ndarray:
        """(N words,) bool: the words scored under ``first_word``."""
        return scored_mask([len(s.words) for s in self.segments], self.first_word)

    def block(self, posteriors: np.ndarray, head: str) -> np.ndarray:
        classes, first = HEADS[head][:2]
        return posteriors[:, first : first + len(classes)]

    def scored_lengths(self) -> list[int]:
        """Scored words per segment, in stacking order."""
        keep, lengths, pos = self.scored(), [], 0
        for seg in self.segments:
            lengths.append(int(keep[pos : pos + len(seg.words)].sum()))
            pos += len(seg.words)
        return lengths


def paired_split(
    segments: Sequence[ItnSegment], tdnn_scp: Pathlike, text_scp: Pathlike, first_word: str = "include"
) -> SplitPosteriors:
    """Both posteriors of every segment; a segment missing from either scp is skipped (counted by the
    caller); a row count or width that does not match the segment is an error naming the scp."""
    check_first_word(first_word)
    tdnn, text = MatrixReader(tdnn_scp), MatrixReader(text_scp)
    kept, pt, pb, skipped = [], [], [], []
    for seg in segments:
        if seg.id not in tdnn or seg.id not in text:
            skipped.append(seg.id)
            continue
        a, b = np.asarray(tdnn[seg.id]), np.asarray(text[seg.id])
        for m, where in ((a, tdnn_scp), (b, text_scp)):
            if m.shape != (len(seg.words), NUM_COLUMNS):
                raise ValueError(f"{where}: {seg.id}: posteriors {m.shape}, expected ({len(seg.words)}, {NUM_COLUMNS})")
        kept.append(seg)
        pt.append(a)
        pb.append(b)
    if not kept:
        raise ValueError(f"no segment in common between {tdnn_scp} and {text_scp}")
    return SplitPosteriors(kept, np.concatenate(pt), np.concatenate(pb), skipped, first_word)


def head_sweeps(data: SplitPosteriors, alphas: Sequence[float]) -> dict[str, list[SweepPoint]]:
    """Alpha sweep of each head on one split's scored words."""
    keep = data.scored()
    return {
        head: alpha_sweep(
            data.reference(head)[keep],
            data.block(data.p_tdnn, head)[keep],
            data.block(data.p_text, head)[keep],
            classes,
            alphas,
        )
        for head, (classes, *_) in HEADS.items()
    }


def choose_head_alphas(
    data: SplitPosteriors,
    alphas: Sequence[float],
    num_resamples: int = 1000,
    seed: int = 42,
    rule: str = "paired-se",
) -> dict[str, AlphaChoice]:
    """Each head's alpha on one split's scored words by ``rule`` (module docstring) on its own statistic
    (punct: macro F1 over the 8 marks; case: [cap] F1), resampling the segments."""
    keep, lengths = data.scored(), data.scored_lengths()
    return {
        head: choose_alpha_by_rule(
            rule,
            data.reference(head)[keep],
            data.block(data.p_tdnn, head)[keep],
            data.block(data.p_text, head)[keep],
            lengths,
            alphas,
            num_resamples,
            seed,
            statistic,
            metric,
        )
        for head, (_, _, statistic, metric) in HEADS.items()
    }


def head_predictions(data: SplitPosteriors, alphas: dict[str, float]) -> dict[str, np.ndarray]:
    """Argmax of each head's ensemble (alpha 1: the TDNN alone)."""
    return {
        head: ensemble(data.block(data.p_tdnn, head), data.block(data.p_text, head), alphas[head]).argmax(axis=1)
        for head in HEADS
    }


def write_predictions(path: Pathlike, data: SplitPosteriors, hyps: dict[str, np.ndarray]) -> None:
    """``decode/<split>.jsonl`` in the format of :func:`punct.scoring.itn.read_predictions` (with ``first_word``
    exclude, the first word's predictions are its reference labels)."""
    lines, pos = [], 0
    for seg in data.segments:
        n = len(seg.words)
        line = {"id": seg.id, "words": list(seg.words)}
        for head, (classes, *_) in HEADS.items():
            ref = [classes[i] for i in getattr(seg, head)]
            line[f"{head}_ref"] = ref
            line[f"{head}_hyp"] = copy_first_word(
                [classes[int(i)] for i in hyps[head][pos : pos + n]], ref, data.first_word
            )
        line["first_word"] = data.first_word
        lines.append(json.dumps(line, ensure_ascii=False))
        pos += n
    if pos != len(hyps["punct"]):
        raise ValueError(f"{path}: {len(hyps['punct'])} predictions for {pos} words")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(path), "".join(x + "\n" for x in lines))
    logging.info("wrote %s (%d segments, %d words)", path, len(lines), pos)
