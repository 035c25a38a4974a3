"""What punctuating an utterance gives: a :class:`Result` (words, marks, posteriors, the punctuated text) or a
:class:`Failure`, and the punctuated text itself (:func:`render_text`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from punct.labels import PUNCT4


@dataclass
class Result:
    """A punctuated utterance."""

    id: str
    text: str  # punctuated text: the transcript's words as given (case kept) followed by the marks
    words: list[str]  # normalised words (lowercase) that were aligned and classified
    labels: list[str]  # predicted mark per word (PUNCT4.classes)
    spans: list[tuple[int, int]]  # [start, end) frames of each word (100 frames/s, relative to the utterance)
    p_tdnn: np.ndarray  # (W, 4)
    p_bert: np.ndarray  # (W, 4)
    p_ensemble: np.ndarray  # (W, 4)
    alpha: float
    transcript_from: str  # "given", "am" or "ctm" (words and times of an external recogniser)
    duration: float  # seconds of audio
    long_form: bool = False  # aligned in chunks as one whole recording (punct.inference.long_form)

    def to_json(self, classes: Sequence[str] = PUNCT4.classes) -> dict:
        def rows(p: np.ndarray) -> list[list[float]]:
            return [[round(float(v), 6) for v in row] for row in p]

        return {
            "id": self.id,
            "text": self.text,
            "transcript_from": self.transcript_from,
            "long_form": self.long_form,
            "alpha": self.alpha,
            "duration": round(self.duration, 4),
            "classes": list(classes),
            "words": [
                {"word": w, "label": label, "start": s * 0.01, "end": e * 0.01, "tdnn": pt, "bert": pb, "ensemble": pe}
                for w, label, (s, e), pt, pb, pe in zip(
                    self.words, self.labels, self.spans, rows(self.p_tdnn), rows(self.p_bert), rows(self.p_ensemble)
                )
            ],
        }


@dataclass
class Failure:
    id: str
    reason: str
    message: str


def render_text(text: str, char_spans: Sequence[tuple[int, int]], labels: Sequence[str]) -> str:
    """The words of ``text`` (surface forms as written) each followed by its predicted mark.

    Marks already in the text are replaced by the predicted ones.  Two words written without a space
    between them ("twenty-one", "ted.com") keep their connector when no mark is predicted between them.
    The words of one written number ("2008" -> two thousand eight) share its span: it is written once,
    with the mark of its last word.
    """
    grouped: list[tuple[tuple[int, int], str]] = []
    for span, label in zip(char_spans, labels):
        if grouped and grouped[-1][0] == tuple(span):
            grouped[-1] = (grouped[-1][0], label)
        else:
            grouped.append((tuple(span), label))
    out: list[str] = []
    n = len(grouped)
    char_spans = [span for span, _ in grouped]
    for i, ((start, end), label) in enumerate(grouped):
        piece = text[start:end]
        mark = "" if label == PUNCT4.none else label
        if mark and piece.endswith(mark):
            mark = ""  # "U.S." + "." -> "U.S."
        out.append(piece + mark)
        if i + 1 < n:
            gap = text[end : char_spans[i + 1][0]]
            if not mark and len(gap) == 1 and gap in "-.:/":
                out.append(gap)
            else:
                out.append(" ")
    return "".join(out)


def spaced_text(words: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    """The text of recognised words (joined by single spaces) and each word's character span in it."""
    char_spans, pos = [], 0
    for w in words:
        char_spans.append((pos, pos + len(w)))
        pos += len(w) + 1
    return " ".join(words), char_spans
