"""Segment scores of the punctuation + case models, egs/parczech (Stankov 2024, sections 5.2 and 5.9).

Input: per-segment predictions, one JSON line per segment (written by
``punct.bin.train_mm``; any other model, e.g. EfficientPunct, can be scored by writing the same
format)::

    {"id": "...", "words": [...], "punct_ref": [...], "punct_hyp": [...], "case_ref": [...], "case_hyp": [...],
     "first_word": "exclude"}

with class names of :data:`punct.labels.PUNCT9.classes` / ``CASE.classes``, one per word.
``first_word`` (optional, default ``include``) is the rule the predictions were made under
(:mod:`punct.labels`): ``exclude`` means the first word's predictions are copies of its reference labels
(the thesis, 5.9), so it is never scored.  The scores leave the first word of every segment out under
``exclude`` and score every word under ``include`` (:func:`scoring_rule` picks the rule of a set of files);
input lengths (short/long quartiles, length bins) always count every word of the segment.

Metrics (word level; per-class precision/recall/F1 as in :func:`punct.scoring.punct_scores.score`):

* F1 of every punctuation class and of ``[cap]``, with bootstrap 95 % confidence intervals:
  ``num_resamples`` (1000) resamples of the *segments* with replacement (seeded), the statistic
  recomputed on each, the 2.5 and 97.5 percentiles reported (Table 5.1);
* macro F1 = unweighted mean of the non-blank punctuation classes' F1 (with its interval);
* PDP / PDR (punctuation detection precision / recall, thesis 5.2): every non-blank label is
  the positive class, ``PDP = TP / (TP + FP)``, ``PDR = TP / (TP + FN)``, where a word whose
  reference and prediction are both some mark is a TP even when the marks differ; also on the
  shortest and the longest 25 % of the segments (by words; ``max(1, round(n / 4))`` segments,
  ties broken by id);
* detection F1 and macro F1 by input length in words (Figure 5.33);
* a model's macro F1 minus a baseline's on the same segments
  (:func:`punct.scoring.intervals.paired_difference`), with a paired bootstrap interval: both resampled with
  the same draws, so that the segments' shared difficulty cancels out and a difference can be significant
  while the two models' own intervals overlap.

All statistics come from per-segment confusion matrices (:mod:`punct.scoring.confusion`), the intervals from
:mod:`punct.scoring.intervals`.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from lhotse.utils import Pathlike

from punct.io.jsonl import read_jsonl
from punct.labels import CAP, CASE, PUNCT9, check_first_word, first_scored
from punct.scoring.confusion import class_f1, confusion_matrices, detection, macro_f1
from punct.scoring.intervals import Interval, bootstrap, paired_difference
from punct.scoring.punct_scores import score

DEFAULT_LENGTH_EDGES: tuple[int, ...] = (5, 10, 15, 20, 30, 50)


class SegmentResult(NamedTuple):
    id: str
    punct_ref: np.ndarray  # class ids
    punct_hyp: np.ndarray
    case_ref: np.ndarray
    case_hyp: np.ndarray
    first_word: str = "include"  # the rule the predictions were written under (exclude: first word copied)

    @property
    def num_words(self) -> int:
        """Words of the segment (the model's input length), scored or not."""
        return len(self.punct_ref)


def read_predictions(path: Pathlike) -> list[SegmentResult]:
    """Prediction lines -> segments; a malformed line is an error naming the file and line."""
    return [_segment_result(d, where) for where, d in read_jsonl(path, "predictions file")]


def _segment_result(d: dict, where: str) -> SegmentResult:
    p_index = {c: i for i, c in enumerate(PUNCT9.classes)}
    c_index = {c: i for i, c in enumerate(CASE.classes)}
    try:
        lists = [d[k] for k in ("punct_ref", "punct_hyp", "case_ref", "case_hyp")]
    except (KeyError, TypeError) as e:
        raise ValueError(f"{where}: expected JSON with punct_ref/punct_hyp/case_ref/case_hyp ({e})") from None
    if len({len(x) for x in lists}) != 1:
        raise ValueError(f"{where}: {d.get('id')}: label lists differ in length {[len(x) for x in lists]}")
    try:
        pr, ph = (np.array([p_index[x] for x in lst], dtype=np.int64) for lst in lists[:2])
        cr, ch = (np.array([c_index[x] for x in lst], dtype=np.int64) for lst in lists[2:])
    except KeyError as e:
        raise ValueError(f"{where}: {d.get('id')}: unknown class {e.args[0]!r}") from None
    try:
        rule = check_first_word(d.get("first_word", "include"))
    except ValueError as e:
        raise ValueError(f"{where}: {d.get('id')}: {e}") from None
    return SegmentResult(str(d.get("id", where.rsplit(":", 1)[-1])), pr, ph, cr, ch, rule)


def scoring_rule(segments: Sequence[SegmentResult], first_word: str | None = None) -> str:
    """The first-word rule to score ``segments`` by: ``first_word``, or (None) the one rule they were written
    under.  Errors: segments written under both rules (the table would mix two protocols; exclude scores
    both alike), or include asked for predictions whose first word was copied from the reference."""
    written = sorted({s.first_word for s in segments})
    if first_word is None:
        if len(written) > 1:
            raise ValueError(
                "predictions written under both first-word rules (include and exclude); score them "
                "all with first_word exclude, or retrain under one rule"
            )
        return written[0] if written else "include"
    if check_first_word(first_word) == "include" and "exclude" in written:
        raise ValueError(
            "first_word include asked for, but some predictions were written under exclude: their "
            "first word's labels are copies of the reference and cannot be scored"
        )
    return first_word


FIRST_WORD_NOTES: dict[str, str] = {
    "exclude": "First word of each segment: excluded (`first_word: exclude`, as the thesis, section 5.9 and "
    "Figure 5.34): its punctuation (the mark after it) and case are neither trained nor scored, and the "
    "written predictions copy them from the reference.",
    "include": "First word of each segment: included (`first_word: include`): every word is trained and scored "
    "(the thesis excludes the first word's labels, section 5.9, so [cap] F1 is not comparable with its "
    "Table 5.1).",
}


# ---- per-segment confusion matrices ---------------------------------------------------------------


def segment_confusions(segments: Sequence[SegmentResult], task: str, first_word: str = "include") -> np.ndarray:
    """(S, C, C) confusion matrix of each segment's scored words for ``task`` "punct" or "case"."""
    classes = PUNCT9.classes if task == "punct" else CASE.classes
    if task not in ("punct", "case"):
        raise ValueError(f"task must be punct or case, got {task!r}")
    start = first_scored(first_word)
    return confusion_matrices(
        [getattr(s, f"{task}_ref")[start:] for s in segments],
        [getattr(s, f"{task}_hyp")[start:] for s in segments],
        len(classes),
    )


# ---- the scores -----------------------------------------------------------------------------------


@dataclass
class ItnScores:
    num_segments: int
    num_words: int
    punct_f1: dict[str, Interval]  # non-blank classes
    cap_f1: Interval
    macro_f1: Interval
    detection: dict[str, dict[str, float]]  # all / short / long -> pdp, pdr, f1, segments
    by_length: list[dict] = field(default_factory=list)  # per length bin
    punct_scores: dict = field(default_factory=dict)  # punct.scoring.punct_scores.score(...).to_dict()
    case_scores: dict = field(default_factory=dict)
    first_word: str = "include"  # the rule scored by (punct.labels)
    scored_words: int = 0  # words whose labels are scored (num_words less the first words under exclude)
    # macro F1 minus the baseline model's on the same segments, paired bootstrap interval (punct.bin.score_itn
    # --baseline); None for the baseline itself or without one
    macro_f1_vs_baseline: Interval | None = None
    baseline: str | None = None

    def to_dict(self) -> dict:
        iv = lambda x: {"value": x.value, "low": x.low, "high": x.high}  # noqa: E731
        return {
            "num_segments": self.num_segments,
            "num_words": self.num_words,
            "first_word": self.first_word,
            "scored_words": self.scored_words,
            "punct_f1": {k: iv(v) for k, v in self.punct_f1.items()},
            "cap_f1": iv(self.cap_f1),
            "macro_f1": iv(self.macro_f1),
            "detection": self.detection,
            "by_length": self.by_length,
            "punct": self.punct_scores,
            "case": self.case_scores,
            **(
                {}
                if self.macro_f1_vs_baseline is None
                else {"baseline": self.baseline, "macro_f1_vs_baseline": iv(self.macro_f1_vs_baseline)}
            ),
        }


def short_long(segments: Sequence[SegmentResult]) -> tuple[list[int], list[int]]:
    """Indices of the shortest and the longest 25 % of the segments (by words, ties by id)."""
    order = sorted(range(len(segments)), key=lambda i: (segments[i].num_words, segments[i].id))
    k = max(1, int(round(len(order) / 4))) if order else 0
    return order[:k], order[len(order) - k :]


def length_bins(edges: Sequence[int]) -> list[tuple[int, float]]:
    """[lo, hi) word-count bins: below the first edge, between edges, and from the last edge on."""
    edges = list(edges)
    return [(0, edges[0])] + list(zip(edges[:-1], edges[1:])) + [(edges[-1], math.inf)]


def score_itn(
    segments: Sequence[SegmentResult],
    num_resamples: int = 1000,
    seed: int = 42,
    length_edges: Sequence[int] = DEFAULT_LENGTH_EDGES,
    first_word: str | None = None,
) -> ItnScores:
    """Every statistic of the module docstring, on the words scored under ``first_word`` (None: the rule the
    segments were written under, :func:`scoring_rule`)."""
    if not segments:
        raise ValueError("no segments to score")
    rule = scoring_rule(segments, first_word)
    pc = segment_confusions(segments, "punct", rule)
    cc = segment_confusions(segments, "case", rule)
    punct_f1, cap_f1, macro = _f1_intervals(pc, cc, num_resamples, seed)
    flat = _scored_labels(segments, first_scored(rule))
    all_p = score(flat["punct_ref"], flat["punct_hyp"], PUNCT9.classes)
    all_c = score(flat["case_ref"], flat["case_hyp"], CASE.classes)
    return ItnScores(
        num_segments=len(segments),
        num_words=sum(s.num_words for s in segments),
        punct_f1=punct_f1,
        cap_f1=cap_f1,
        macro_f1=macro,
        detection=_detection_scores(segments, pc),
        by_length=_scores_by_length(segments, pc, length_edges),
        punct_scores=all_p.to_dict(),
        case_scores=all_c.to_dict(),
        first_word=rule,
        scored_words=len(flat["punct_ref"]),
    )


def _f1_intervals(
    pc: np.ndarray, cc: np.ndarray, num_resamples: int, seed: int
) -> tuple[dict[str, Interval], Interval, Interval]:
    """Bootstrap intervals from the (S, C, C) punctuation and case confusions: F1 of each non-blank punctuation
    class, F1 of ``[cap]``, macro F1."""
    f1_point, f1_low, f1_high = bootstrap(pc, class_f1, num_resamples, seed)
    macro = bootstrap(pc, macro_f1, num_resamples, seed)
    cap_point, cap_low, cap_high = bootstrap(cc, class_f1, num_resamples, seed)
    punct_f1 = {
        c: Interval(float(f1_point[i]), float(f1_low[i]), float(f1_high[i])) for i, c in enumerate(PUNCT9.classes) if i
    }
    cap = CASE.classes.index(CAP)
    return (
        punct_f1,
        Interval(float(cap_point[cap]), float(cap_low[cap]), float(cap_high[cap])),
        Interval(float(macro[0]), float(macro[1]), float(macro[2])),
    )


def _detection_scores(segments: Sequence[SegmentResult], pc: np.ndarray) -> dict[str, dict[str, float]]:
    """PDP, PDR and detection F1 of all segments and of the shortest / longest 25 % (:func:`short_long`), the
    quartiles with their longest / shortest segment's words."""
    short, long = short_long(segments)
    det = {}
    for name, idx in (("all", list(range(len(segments)))), ("short", short), ("long", long)):
        p, r, f = detection(pc[idx].sum(axis=0))
        det[name] = {"pdp": float(p), "pdr": float(r), "f1": float(f), "segments": len(idx)}
        if name == "short":
            det[name]["max_words"] = max(segments[i].num_words for i in idx)
        elif name == "long":
            det[name]["min_words"] = min(segments[i].num_words for i in idx)
    return det


def _scores_by_length(segments: Sequence[SegmentResult], pc: np.ndarray, edges: Sequence[int]) -> list[dict]:
    """Detection F1 and macro F1 of each :func:`length_bins` bin that holds segments (Figure 5.33)."""
    by_length = []
    lengths = np.array([s.num_words for s in segments])
    for lo, hi in length_bins(edges):
        idx = np.nonzero((lengths >= lo) & (lengths < hi))[0]
        if not len(idx):
            continue
        cm = pc[idx].sum(axis=0)
        p, r, f = detection(cm)
        by_length.append(
            {
                "min_words": int(lo),
                "max_words": None if math.isinf(hi) else int(hi) - 1,
                "segments": int(len(idx)),
                "words": int(lengths[idx].sum()),
                "detection_f1": float(f),
                "macro_f1": float(macro_f1(cm)),
            }
        )
    return by_length


def _scored_labels(segments: Sequence[SegmentResult], start: int) -> dict[str, np.ndarray]:
    """The four label arrays of all segments concatenated, each segment from its first scored word ``start``."""
    return {
        k: np.concatenate([getattr(s, k)[start:] for s in segments])
        for k in ("punct_ref", "punct_hyp", "case_ref", "case_hyp")
    }


def compare_with_baseline(
    predictions: dict[str, Sequence[SegmentResult]],
    scores: dict[str, ItnScores],
    baseline: str,
    rule: str,
    num_resamples: int = 1000,
    seed: int = 42,
) -> list[str]:
    """Sets the paired macro-F1 difference against ``baseline`` (:func:`paired_difference`) of every other model in
    ``scores`` (model -> :func:`score_itn` under ``rule``); returns the models left without one because their
    segments (ids) are not the baseline's."""
    by_id = operator.attrgetter("id")
    base = sorted(predictions[baseline], key=by_id)
    base_confusions = segment_confusions(base, "punct", rule)
    skipped = []
    for name, segments in predictions.items():
        if name == baseline:
            continue
        ordered = sorted(segments, key=by_id)
        if [s.id for s in ordered] != [s.id for s in base]:
            skipped.append(name)
            continue
        point, low, high = paired_difference(
            segment_confusions(ordered, "punct", rule), base_confusions, macro_f1, num_resamples, seed
        )
        scores[name] = dataclasses.replace(
            scores[name], macro_f1_vs_baseline=Interval(point, low, high), baseline=baseline
        )
    return skipped
