"""The confusion-count core: every precision, recall and F1 of both recipes comes from (..., C, C) confusion matrices.

Conventions (EfficientPunct, Huang et al. 2021, Stankov 2024):

* rows = reference class, columns = predicted class; class 0 (``blank``, "NP" for punct4) is "no punctuation"
  and is not a mark;
* per class c: TP = ref c & hyp c, precision = TP / #hyp c, recall = TP / #ref c, F1 = 2PR / (P + R), each 0
  when undefined (:func:`class_scores`);
* micro ("overall"): TP summed over the marks, precision over all words predicted as some mark, recall over
  all words whose reference is some mark; a comma predicted as a full stop is a false positive of "." and a
  false negative of "," (:func:`micro_scores`);
* macro F1: the unweighted mean of the marks' F1 (:func:`macro_f1`);
* detection (PDP / PDR, Stankov 2024, 5.2): every mark is the positive class, so a word whose reference and
  prediction are both some mark is a TP even when the marks differ (:func:`detection`).

Every function takes a batch of matrices (..., C, C), so that the bootstrap (:mod:`punct.scoring.intervals`)
scores 1000 resamples in one call.

>>> cm = confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], 3)
>>> class_f1(cm).tolist(), float(macro_f1(cm)), detection(cm).tolist()
([1.0, 0.6666666666666666, 0.6666666666666666], 0.6666666666666666, [1.0, 1.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


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


def confusion_matrices(refs: Sequence[Sequence[int]], hyps: Sequence[Sequence[int]], num_classes: int) -> np.ndarray:
    """(S, C, C): the confusion matrix of each of S utterances (or segments); (0, C, C) for none."""
    if len(refs) != len(hyps):
        raise ValueError(f"{len(refs)} references against {len(hyps)} predictions")
    if not len(refs):
        return np.zeros((0, num_classes, num_classes), dtype=np.int64)
    return np.stack([confusion_matrix(r, h, num_classes) for r, h in zip(refs, hyps)])


def precision_recall_f1(
    tp: np.ndarray, num_hyp: np.ndarray, num_ref: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F1 from counts of one shape (0 where undefined)."""
    tp, num_hyp, num_ref = (np.asarray(x, dtype=np.float64) for x in (tp, num_hyp, num_ref))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(num_hyp > 0, tp / num_hyp, 0.0)
        r = np.where(num_ref > 0, tp / num_ref, 0.0)
        f = np.where(p + r > 0, 2 * p * r / (p + r), 0.0)
    return p, r, f


def class_scores(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-class precision, recall and F1 of (..., C, C) confusion matrices, each (..., C)."""
    cm = np.asarray(cm, dtype=np.float64)
    return precision_recall_f1(np.diagonal(cm, axis1=-2, axis2=-1), cm.sum(axis=-2), cm.sum(axis=-1))


def class_f1(cm: np.ndarray) -> np.ndarray:
    """Per-class F1 of (..., C, C) confusion matrices (0 where undefined) -> (..., C)."""
    return class_scores(cm)[2]


def macro_f1(cm: np.ndarray) -> np.ndarray:
    """Mean F1 of the non-blank classes (class 0 is blank) -> (...)."""
    return class_f1(cm)[..., 1:].mean(axis=-1)


def _mark_counts(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Words predicted as some mark, and words whose reference is some mark -> (...), (...)."""
    return cm[..., :, 1:].sum(axis=(-2, -1)), cm[..., 1:, :].sum(axis=(-2, -1))


def micro_scores(cm: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Precision, recall and F1 of the marks pooled (a mark predicted as another mark is wrong) -> (...) each."""
    cm = np.asarray(cm, dtype=np.float64)
    return precision_recall_f1(np.diagonal(cm, axis1=-2, axis2=-1)[..., 1:].sum(axis=-1), *_mark_counts(cm))


def micro_f1(cm: np.ndarray) -> np.ndarray:
    """The F1 of :func:`micro_scores` as 2 TP / (#hyp + #ref) -> (...): the same value, in the last bit not
    always the same float as 2PR / (P + R); the statistic the ensemble's alpha rules resample."""
    cm = np.asarray(cm, dtype=np.float64)
    tp = np.diagonal(cm, axis1=-2, axis2=-1)[..., 1:].sum(axis=-1)
    num_hyp, num_ref = _mark_counts(cm)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(num_hyp + num_ref > 0, 2 * tp / (num_hyp + num_ref), 0.0)


def detection(cm: np.ndarray) -> np.ndarray:
    """(..., 3): PDP, PDR and detection F1 of (..., C, C) punctuation confusion matrices."""
    cm = np.asarray(cm, dtype=np.float64)
    return np.stack(precision_recall_f1(cm[..., 1:, 1:].sum(axis=(-2, -1)), *_mark_counts(cm)), axis=-1)
