"""What punctuating an utterance gives: a :class:`Result` (words, marks, posteriors, the punctuated text) or a
:class:`Failure`, the punctuated text itself (:func:`render_text`), and the files ``punctuate`` writes of them
(``text``, ``punct.jsonl``, ``failed``; a stream's ``stream.jsonl``)."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from punct.labels import PUNCT4
from punct.utils.atomic import atomic_write_text


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


@dataclass
class OutputLines:
    """The lines of ``text``, ``punct.jsonl`` and ``failed``, and the seconds of audio punctuated."""

    text: list[str] = field(default_factory=list)
    json: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    audio_seconds: float = 0.0


def collect_outputs(outputs: Iterable[Result | Failure], echo: bool) -> OutputLines:
    """The lines of every output (a failure logged and listed); ``echo``: each punctuated text printed too."""
    lines = OutputLines()
    for out in outputs:
        if isinstance(out, Failure):
            logging.error("%s: %s", out.id, out.message)
            lines.failed.append(f"{out.id} {out.message}\n")
            continue
        lines.audio_seconds += out.duration
        lines.text.append(f"{out.id} {out.text}\n")
        lines.json.append(json.dumps(out.to_json(), ensure_ascii=False) + "\n")
        if echo:
            print(out.text)
    return lines


def write_outputs(out_dir: Path, suffix: str, lines: OutputLines) -> list[Path]:
    """``text``, ``punct.jsonl`` and ``failed`` (each with this job's ``suffix``) written; their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"text{suffix}", out_dir / f"punct{suffix}.jsonl", out_dir / f"failed{suffix}"]
    for path, content in zip(paths, (lines.text, lines.json, lines.failed)):
        atomic_write_text(path, "".join(content))
    return paths


def write_stream_outputs(out_dir: Path, result: Result, words: list) -> None:
    """``text`` and ``punct.jsonl`` as offline writes them, and ``stream.jsonl``: when each word was printed."""
    lines = OutputLines([f"{result.id} {result.text}\n"], [json.dumps(result.to_json(), ensure_ascii=False) + "\n"])
    write_outputs(out_dir, "", lines)
    records = [
        json.dumps({"word": w.word, "label": w.label, "emitted_at": round(w.emitted_at, 3), "final": w.final})
        for w in words
    ]
    atomic_write_text(out_dir / "stream.jsonl", "".join(r + "\n" for r in records))
