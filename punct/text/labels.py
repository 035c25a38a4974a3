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
