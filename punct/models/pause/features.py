"""Per-word pause features from word times, and the words of a split with their features and labels.

Per word, in seconds (``FEATURE_NAMES``):

* ``pause_after``: the silence after the word, up to the next word's start; for the segment's last word, up to
  the segment's end;
* ``pause_before``: the silence before the word, from the previous word's end; for the first word, from the
  segment's start;
* ``duration``: the word's own duration;
* ``is_last``: 1.0 for the segment's last word, else 0.0.

Gaps are signed: words whose times overlap (rounding of an aligner) give a negative pause, as they came.

The word times are those the speech models see as word boundaries: ``alignment["word"]`` of the supervision
(egs/mustc: stage 3's forced alignment in ``<prefix>_cuts_<split>_ali.jsonl.gz``, which stage 7's TDNN reads;
egs/parczech: the segments' recognised word times of stage 3), on the recording's axis; the segment is the
supervision, shifted by the cut's start for a cut.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from punct.labels import LabelSet, WordLabels, aligned_words, encode_labels
from punct.utils.pathlike import Pathlike

FEATURE_NAMES: tuple[str, ...] = ("pause_after", "pause_before", "duration", "is_last")


def pause_features(
    starts: Sequence[float], ends: Sequence[float], segment_start: float, segment_end: float
) -> np.ndarray:
    """(W, 4) features of ``FEATURE_NAMES`` of the words spanning [starts[i], ends[i]) seconds, spoken in
    order inside the segment [segment_start, segment_end) (all on one time axis)."""
    starts, ends = np.asarray(starts, dtype=np.float64), np.asarray(ends, dtype=np.float64)
    if starts.shape != ends.shape or starts.ndim != 1:
        raise ValueError(f"word starts {starts.shape} and ends {ends.shape} must be two vectors of one length")
    next_starts = np.append(starts[1:], segment_end)
    previous_ends = np.insert(ends[:-1], 0, segment_start)
    is_last = np.zeros(len(starts))
    is_last[-1:] = 1.0
    return np.stack([next_starts - ends, starts - previous_ends, ends - starts, is_last], axis=1)


def supervision_features(sup: Any, offset: float = 0.0) -> np.ndarray | None:
    """The features of the words of ``sup`` (a lhotse SupervisionSegment) from its ``alignment["word"]``; the
    segment is the supervision moved by ``offset`` (a cut's start: a cut's supervision starts relative to the
    cut, its alignment on the recording's axis).  None when it has no word alignment."""
    timed = aligned_words(sup)
    if timed is None:
        return None
    return pause_features(
        [w.start for w in timed], [w.end for w in timed], offset + sup.start, offset + sup.start + sup.duration
    )


@dataclass
class WordPauses:
    """The words of a split, utterance after utterance in manifest order: their features and label ids."""

    utterances: list[WordLabels]
    features: np.ndarray  # (N, len(FEATURE_NAMES))
    labels: np.ndarray  # (N,) punctuation class ids
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> utterances left out

    @property
    def lengths(self) -> list[int]:
        return [len(u) for u in self.utterances]

    def split(self, matrix: np.ndarray) -> list[np.ndarray]:
        """A (N, ...) matrix over the words -> one (W, ...) matrix per utterance."""
        if len(matrix) != len(self.labels):
            raise ValueError(f"{len(matrix)} rows for {len(self.labels)} words")
        return np.split(matrix, np.cumsum(self.lengths)[:-1]) if self.utterances else []


def _supervision_and_offset(item: Any) -> tuple[Any, float]:
    """A cut's first supervision and the cut's start, or a supervision itself and 0."""
    if hasattr(item, "supervisions"):
        if not item.supervisions:
            raise ValueError(f"cut {item.id} has no supervision")
        return item.supervisions[0], float(item.start)
    return item, 0.0


def _skip_reason(labelled: WordLabels, matrix: np.ndarray | None) -> str:
    """Why an utterance cannot be used ("" when it can)."""
    if not len(labelled):
        return "no words"
    if matrix is None:
        return "no word alignment"
    return "words/alignment lengths differ" if len(matrix) != len(labelled) else ""


def word_pauses(
    items: Iterable[Any], punct_set: LabelSet, case_set: LabelSet | None = None, source: str = "manifest"
) -> WordPauses:
    """The words of ``items`` (cuts or supervisions) with their pause features and punctuation label ids.

    An utterance without words, without a word alignment or with another number of aligned words than words is
    left out, counted by reason in ``skipped`` and logged (as stage 7's TDNN leaves such cuts out)."""
    utterances, features, skipped = [], [], Counter()
    for item in items:
        sup, offset = _supervision_and_offset(item)
        labelled = WordLabels.from_supervision(sup, punct_set, case_set, where=source)
        matrix = supervision_features(sup, offset)
        reason = _skip_reason(labelled, matrix)
        if reason:
            skipped[reason] += 1
            continue
        utterances.append(labelled)
        features.append(matrix)
    for reason, count in sorted(skipped.items()):
        logging.warning("%s: left out %d utterance(s): %s", source, count, reason)
    labels = [encode_labels(u.punct, punct_set.classes) for u in utterances]
    return WordPauses(
        utterances,
        np.concatenate(features) if features else np.zeros((0, len(FEATURE_NAMES))),
        np.concatenate(labels).astype(np.int64) if labels else np.zeros(0, dtype=np.int64),
        dict(skipped),
    )


def read_word_pauses(path: Pathlike, punct_set: LabelSet, case_set: LabelSet | None = None) -> WordPauses:
    """:func:`word_pauses` of a lhotse manifest of cuts or supervisions (jsonl.gz)."""
    from lhotse import load_manifest_lazy

    if not Path(path).is_file():
        raise FileNotFoundError(f"no such file: {path}")
    return word_pauses(load_manifest_lazy(path), punct_set, case_set, source=str(path))
