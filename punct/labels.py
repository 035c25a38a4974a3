"""Punctuation label sets.

EfficientPunct (MuST-C) predicts, for every word, the mark that follows it: no punctuation,
comma, full stop or question mark.  The class index order below is used everywhere
(models, shards of posteriors, metrics); labels are stored by name on the supervisions.
"""

from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

NO_PUNCT = "NP"

# Index order of the four EfficientPunct classes.
MUSTC_CLASSES: Tuple[str, ...] = (NO_PUNCT, ",", ".", "?")


def class_index(classes: Sequence[str]) -> Dict[str, int]:
    return {name: i for i, name in enumerate(classes)}


def encode_labels(labels: Sequence[str], classes: Sequence[str] = MUSTC_CLASSES) -> List[int]:
    """Label names -> class indices; an unknown name is an error that names it."""
    index = class_index(classes)
    try:
        return [index[label] for label in labels]
    except KeyError as e:
        raise ValueError(f"unknown punctuation label {e.args[0]!r}; classes are {list(classes)}") from None


def supervision_words(sup) -> Tuple[List[str], List[str]]:
    """``(words, punct)`` stored on a supervision by data preparation (never re-derived from the text).

    Raises ValueError naming the supervision when the fields are missing or inconsistent.
    """
    custom = getattr(sup, "custom", None) or {}
    if "words" not in custom or "punct" not in custom:
        raise ValueError(f"supervision {sup.id}: no custom['words']/custom['punct']; prepare it with stage 0")
    words, punct = list(custom["words"]), list(custom["punct"])
    if len(words) != len(punct):
        raise ValueError(f"supervision {sup.id}: {len(words)} words but {len(punct)} labels")
    unknown = sorted(set(punct) - set(MUSTC_CLASSES))
    if unknown:
        raise ValueError(f"supervision {sup.id}: unknown labels {unknown}; classes are {list(MUSTC_CLASSES)}")
    return words, punct
