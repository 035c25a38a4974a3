"""The EfficientPunct ensemble: p = alpha * p_tdnn + (1 - alpha) * p_bert, argmax.

alpha = 0 is BERT alone, alpha = 1 the TDNN alone.  The paper reports alpha on the test set
(0.4); here alpha is chosen on dev (highest overall F1; ties go to the smallest alpha, i.e.
the most text-weighted) and test is reported at the chosen alpha and at 0.4.  ``choose_alpha`` takes
another selection metric too (punct9 + case: macro F1 of the punctuation head, [cap] F1 of the case head,
each head's alpha chosen separately; see ``punct.models.punct_tdnn.segment_ensemble``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np
from lhotse.utils import Pathlike

from punct.io.shards import MatrixReader
from punct.metrics import PunctScores, score

PAPER_ALPHA = 0.4

Metric = Callable[[PunctScores], float]


def overall_f1(scores: PunctScores) -> float:
    return scores.overall["f1"]


def macro_f1(scores: PunctScores) -> float:
    """Mean F1 of the non-blank classes."""
    return scores.macro_f1


def class_f1(name: str) -> Metric:
    """The F1 of one class (e.g. "cap")."""

    def metric(scores: PunctScores) -> float:
        return scores.per_class[name]["f1"]

    return metric


def default_alphas(step: float = 0.1) -> List[float]:
    """0.0, 0.1, ..., 1.0 (rounded, so 0.30000000000000004 prints as 0.3)."""
    n = int(round(1.0 / step))
    return [round(i * step, 10) for i in range(n + 1)]


def ensemble(p_tdnn: np.ndarray, p_bert: np.ndarray, alpha: float) -> np.ndarray:
    if p_tdnn.shape != p_bert.shape:
        raise ValueError(f"posterior shapes differ: TDNN {p_tdnn.shape} vs BERT {p_bert.shape}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    return alpha * p_tdnn + (1.0 - alpha) * p_bert


@dataclass
class SweepPoint:
    alpha: float
    scores: PunctScores


def alpha_sweep(
    ref: np.ndarray, p_tdnn: np.ndarray, p_bert: np.ndarray, classes: Sequence[str], alphas: Sequence[float]
) -> List[SweepPoint]:
    return [SweepPoint(a, score(ref, ensemble(p_tdnn, p_bert, a).argmax(axis=1), classes)) for a in alphas]


def choose_alpha(sweep: Sequence[SweepPoint], metric: Metric = overall_f1) -> float:
    """The alpha with the highest ``metric`` (default overall F1; ties: the smallest alpha)."""
    if not sweep:
        raise ValueError("empty alpha sweep")
    best = max(sweep, key=lambda p: (metric(p.scores), -p.alpha))
    return best.alpha


def paired_posteriors(
    tdnn_scp: Pathlike, bert_scp: Pathlike, references: Dict[str, np.ndarray]
) -> Tuple[np.ndarray, np.ndarray, np.ndarray, List[str]]:
    """Stacks, over the utterances of ``references`` (key -> label ids, in its order), the reference
    labels and the two posteriors.  An utterance missing from either scp, or whose row counts differ
    from its number of words, is skipped and counted; returns (ref, p_tdnn, p_bert, skipped keys)."""
    tdnn, bert = MatrixReader(tdnn_scp), MatrixReader(bert_scp)
    refs, pt, pb, skipped = [], [], [], []
    for key, labels in references.items():
        if key not in tdnn or key not in bert:
            skipped.append(key)
            continue
        a, b = tdnn[key], bert[key]
        if a.shape != (len(labels), b.shape[1]) or b.shape[0] != len(labels):
            raise ValueError(
                f"{key}: {len(labels)} words but TDNN posteriors {a.shape} ({tdnn_scp}) and BERT posteriors {b.shape} ({bert_scp})"
            )
        refs.append(np.asarray(labels))
        pt.append(a)
        pb.append(b)
    if not refs:
        raise ValueError(f"no utterance in common between {tdnn_scp} and {bert_scp}")
    return np.concatenate(refs), np.concatenate(pt), np.concatenate(pb), skipped
