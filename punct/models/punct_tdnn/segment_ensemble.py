"""EfficientPunct on segments with punct9 + case labels: the two-head ensemble and the scoring-format predictions.

Both sides give per-word posteriors with the same column blocks: the punctuation softmax in
``PUNCT9.classes`` order, then the case softmax in ``CASE.classes`` order (the TDNN with a case head,
``punct.bin.decode_tdnn``; the text-only model, ``punct.bin.dump_itn_text``).  Per head,
``p = alpha * p_tdnn + (1 - alpha) * p_text``, with each head's alpha chosen on dev: punctuation by
macro F1 over the 8 marks, case by [cap] F1 (ties: the smallest alpha, i.e. the most text-weighted).
Predictions are written as ``decode/<split>.jsonl`` lines read by :mod:`punct.scoring`.

``first_word`` (:mod:`punct.labels`): with ``exclude`` (as the thesis) the alphas are chosen on the words after
each segment's first, and the written predictions of the first word are its reference labels.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import numpy as np
from lhotse.utils import Pathlike

from punct.ensemble import Metric, SweepPoint, alpha_sweep, choose_alpha, class_f1, ensemble, macro_f1
from punct.io.shards import MatrixReader
from punct.labels import CAP, CASE, PUNCT9, check_first_word, copy_first_word, scored_mask
from punct.models.cross_attention.data import ItnSegment
from punct.utils.atomic import atomic_write_text

# head -> (classes, first column, dev selection metric)
HEADS: Dict[str, Tuple[Tuple[str, ...], int, Metric]] = {
    "punct": (tuple(PUNCT9.classes), 0, macro_f1),
    "case": (tuple(CASE.classes), len(PUNCT9.classes), class_f1(CAP)),
}
NUM_COLUMNS = len(PUNCT9.classes) + len(CASE.classes)


@dataclass
class SplitPosteriors:
    """Segments that have both posteriors, with their stacked references and posteriors, and the
    first-word rule they are scored and written under."""

    segments: List[ItnSegment]
    p_tdnn: np.ndarray  # (N words, 11)
    p_text: np.ndarray  # (N words, 11)
    skipped: List[str]
    first_word: str = "include"

    def reference(self, head: str) -> np.ndarray:
        return np.concatenate([np.asarray(getattr(s, head), dtype=np.int64) for s in self.segments])

    def scored(self) -> np.ndarray:
        """(N words,) bool: the words scored under ``first_word``."""
        return scored_mask([len(s.words) for s in self.segments], self.first_word)

    def block(self, posteriors: np.ndarray, head: str) -> np.ndarray:
        classes, first, _ = HEADS[head]
        return posteriors[:, first : first + len(classes)]


def paired_split(segments: Sequence[ItnSegment], tdnn_scp: Pathlike, text_scp: Pathlike,
                 first_word: str = "include") -> SplitPosteriors:
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


def head_sweeps(data: SplitPosteriors, alphas: Sequence[float]) -> Dict[str, List[SweepPoint]]:
    """Alpha sweep of each head on one split's scored words."""
    keep = data.scored()
    return {
        head: alpha_sweep(data.reference(head)[keep], data.block(data.p_tdnn, head)[keep], data.block(data.p_text, head)[keep],
                          classes, alphas)
        for head, (classes, _, _) in HEADS.items()
    }


def choose_head_alphas(sweeps: Dict[str, List[SweepPoint]]) -> Dict[str, float]:
    """Each head's alpha by its own metric (punct: macro F1; case: [cap] F1)."""
    return {head: choose_alpha(sweeps[head], HEADS[head][2]) for head in HEADS}


def head_predictions(data: SplitPosteriors, alphas: Dict[str, float]) -> Dict[str, np.ndarray]:
    """Argmax of each head's ensemble (alpha 1: the TDNN alone)."""
    return {
        head: ensemble(data.block(data.p_tdnn, head), data.block(data.p_text, head), alphas[head]).argmax(axis=1)
        for head in HEADS
    }


def write_predictions(path: Pathlike, data: SplitPosteriors, hyps: Dict[str, np.ndarray]) -> None:
    """``decode/<split>.jsonl`` in the format of :func:`punct.scoring.read_predictions` (with ``first_word``
    exclude, the first word's predictions are its reference labels)."""
    lines, pos = [], 0
    for seg in data.segments:
        n = len(seg.words)
        line = {"id": seg.id, "words": list(seg.words)}
        for head, (classes, _, _) in HEADS.items():
            ref = [classes[i] for i in getattr(seg, head)]
            line[f"{head}_ref"] = ref
            line[f"{head}_hyp"] = copy_first_word([classes[int(i)] for i in hyps[head][pos : pos + n]], ref, data.first_word)
        line["first_word"] = data.first_word
        lines.append(json.dumps(line, ensure_ascii=False))
        pos += n
    if pos != len(hyps["punct"]):
        raise ValueError(f"{path}: {len(hyps['punct'])} predictions for {pos} words")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(Path(path), "".join(x + "\n" for x in lines))
    logging.info("wrote %s (%d segments, %d words)", path, len(lines), pos)
