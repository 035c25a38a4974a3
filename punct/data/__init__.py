"""Corpora -> lhotse manifests: MuST-C v1/v2 and UniPunc (mustc), the embedded mini corpus
(mini_corpus), espeak-ng synthesis (tts).  Words and labels live on each supervision's ``custom``."""

from __future__ import annotations

from typing import List, Tuple

from punct.text.labels import MUSTC_CLASSES


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
