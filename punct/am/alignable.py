"""Words as the acoustic model can align them: letters its token table lacks, folded to letters it has.

Forced alignment spells each word in the AM's characters (``tokens.txt``).  A letter the table lacks (``é`` in
``café`` for an English AM) is folded *for the alignment only*; every output keeps the original word.  A
character the table has is never changed (a Czech AM keeps ``č``).  A missing character is folded by the first
of these that gives only characters of the table:

1. Unicode compatibility decomposition (NFKD) with the combining marks dropped: ``é`` -> ``e``, ``č`` -> ``c``,
   ``ů`` -> ``u``, ``ﬁ`` -> ``fi``;
2. :data:`FOLDS`, for letters that do not decompose: ``ß`` -> ``ss``, ``æ`` -> ``ae``, ``œ`` -> ``oe``,
   ``ø`` -> ``o``, ``đ`` -> ``d``, ``ł`` -> ``l``, ``þ`` -> ``th``, ``ð`` -> ``d``, curly apostrophes -> ``'``;

each also tried in lowercase.  A character none of them maps into the table (``日``, a digit for an AM
without digits) is left out of its word.  A word left with no character at all cannot be aligned: it is
*placed* between its aligned neighbours (:func:`place_unaligned`: the frames between them, or the last frame of
the word before when there are none) and counted; an utterance none of whose words can be aligned fails
(``AlignmentError("unknown character")``).

One path: the recipe's stage 3 (``punct.am.align``), ``punctuate`` on utterances and on whole recordings
(``punct.inference.pipeline``, whose long-form alignment ``punct.recognition.long_align`` is given the folded
words) all fold through :func:`fold_words`.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from punct.am.tokens import BLANK, SPACE, TokenTable
from punct.am.viterbi import AlignmentError, WordSpan, ctc_forced_align, encode_for_alignment, word_spans

FOLDS: dict[str, str] = {
    "ß": "ss",
    "æ": "ae",
    "œ": "oe",
    "ø": "o",
    "đ": "d",
    "ł": "l",
    "þ": "th",
    "ð": "d",
    "ħ": "h",
    "ı": "i",
    "ŋ": "ng",
    "’": "'",
    "‘": "'",
    "ʼ": "'",
}
"""Letters without a Unicode decomposition, and their spelling in plain Latin letters (lowercase)."""


def decomposed(ch: str) -> str:
    """``ch`` in its compatibility decomposition without combining marks (``é`` -> ``e``, ``ﬁ`` -> ``fi``)."""
    return "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))


def fold_char(ch: str, symbols: Collection[str]) -> str:
    """``ch`` spelled in ``symbols`` (module docstring): itself when there, else the first fold made only of
    ``symbols``; ``""`` when there is none."""
    if ch in symbols:
        return ch
    for form in (decomposed(ch), FOLDS.get(ch, ""), decomposed(ch.lower()), FOLDS.get(ch.lower(), "")):
        if form and all(c in symbols for c in form):
            return form
    base = decomposed(ch.lower())  # a decomposed letter that is then in FOLDS (``ǣ`` -> ``æ`` -> ``ae``)
    form = "".join(FOLDS.get(c, c) for c in base)
    return form if form and all(c in symbols for c in form) else ""


@dataclass
class FoldedWords:
    """``words`` and ``said``, each word as it is aligned (``""``: nothing left to align), with what changed."""

    words: list[str]
    said: list[str]
    folds: Counter = field(default_factory=Counter)  # "é->e": how many times
    dropped: Counter = field(default_factory=Counter)  # characters left out of their words

    @property
    def unaligned(self) -> list[str]:
        """The words with nothing left to align (placed between their neighbours)."""
        return [w for w, s in zip(self.words, self.said) if not s]

    @property
    def changed(self) -> int:
        return sum(w != s for w, s in zip(self.words, self.said))

    def summary(self) -> str:
        """One line for the log: the counts, with examples; ``""`` when nothing changed."""
        if not self.changed:
            return ""
        parts = [f"{self.changed} of {len(self.words)} words spelled in the AM's letters for alignment"]
        if self.folds:
            parts.append("folds " + ", ".join(f"{k} x{n}" for k, n in self.folds.most_common(5)))
        if self.dropped:
            parts.append("left out " + ", ".join(f"{k!r} x{n}" for k, n in self.dropped.most_common(5)))
        if self.unaligned:
            parts.append(f"{len(self.unaligned)} placed between neighbours, not aligned: {self.unaligned[:5]}")
        return "; ".join(parts)


def alignment_symbols(tokens: TokenTable) -> dict[str, int]:
    """The characters a word may be spelled in: the table without the blank and the separator."""
    return {s: i for s, i in tokens.ids.items() if s not in (BLANK, SPACE)}


def fold_words(words: Sequence[str], symbols: Collection[str]) -> FoldedWords:
    """Each word spelled in ``symbols`` (module docstring).

    Raises:
      AlignmentError("unknown character"): no word has anything left to align.
    """
    out = FoldedWords(list(words), [])
    for i, word in enumerate(words):
        if not word:
            raise AlignmentError("empty word", f"word {i} is empty")
        spelled = [fold_char(ch, symbols) for ch in word]
        for ch, form in zip(word, spelled):
            if form and form != ch:
                out.folds[f"{ch}->{form}"] += 1
            elif not form:
                out.dropped[ch] += 1
        out.said.append("".join(spelled))
    if words and not any(out.said):
        raise AlignmentError(
            "unknown character",
            f"no word of {list(words)[:5]} has a character of the acoustic model's token table, even folded "
            "(punct.am.alignable)",
        )
    return out


def place_unaligned(
    spans: Sequence[tuple[float, float]], kept: Sequence[int], num_words: int, total: float, least: float = 1
) -> list[tuple[float, float]]:
    """``(start, end)`` of all ``num_words`` words from those of the aligned words ``kept`` (indices, in order).

    A run of words that were not aligned shares the stretch between its aligned neighbours (from 0, to
    ``total``); when that is shorter than ``least`` it takes the last ``least`` of the word before (the first of
    the word after at the start).  Starts stay in order."""
    out: list[tuple[float, float] | None] = [None] * num_words
    for i, span in zip(kept, spans):
        out[i] = (span[0], span[1])
    i = 0
    while i < num_words:
        if out[i] is not None:
            i += 1
            continue
        j = i
        while j < num_words and out[j] is None:
            j += 1
        lo = out[i - 1][1] if i > 0 else 0
        hi = out[j][0] if j < num_words else total
        if hi - lo < least:
            lo, hi = (lo - least, lo) if i > 0 else (hi, hi + least)
        out[i:j] = [(lo, hi)] * (j - i)
        i = j
    return out


def align_folded(log_probs: np.ndarray, folded: FoldedWords, tokens: TokenTable) -> list[WordSpan]:
    """Frame spans of every original word: the CTC forced alignment of the folded words that have characters,
    the others placed between them (:func:`place_unaligned`).  Raises AlignmentError."""
    kept = [i for i, s in enumerate(folded.said) if s]
    symbols = alignment_symbols(tokens)
    token_seq, word_of_token = encode_for_alignment([folded.said[i] for i in kept], symbols, tokens.space_id)
    token_index, _ = ctc_forced_align(log_probs, token_seq)
    aligned = word_spans(token_index, [folded.words[i] for i in kept], word_of_token)
    if len(kept) == len(folded.words):
        return aligned
    spans = place_unaligned([(s.start, s.end) for s in aligned], kept, len(folded.words), log_probs.shape[0])
    return [WordSpan(w, int(a), int(b)) for w, (a, b) in zip(folded.words, spans)]


def align_words(log_probs: np.ndarray, words: Sequence[str], tokens: TokenTable) -> tuple[list[WordSpan], FoldedWords]:
    """:func:`fold_words` then :func:`align_folded`; the spans carry the original words."""
    folded = fold_words(words, alignment_symbols(tokens))
    return align_folded(log_probs, folded, tokens), folded
