"""Tokenised official transcripts -> words with punct9 and case labels (Stankov 2024, thesis section 3.3.1).

The official transcripts are tokenised by UDPipe: every word, number and punctuation mark
is a token of its own, and a punctuation mark belongs to the word before it.  A word's
punctuation label is the mark that follows it; its case label is ``cap`` when its first
character is upper case.

Rules, in the order they are applied (thesis 3.3.1, "Aligning Recognized Transcripts ..."):

1. ``PUNCT_MAP``: less common marks (backslash, apostrophes, ``@``, backtick, ``|``) are
   replaced by white space, i.e. the token disappears; ``(`` and ``)`` become commas; an
   ellipsis (``...`` or ``…``) becomes a full stop; all lower/upper/straight quotes become
   ``"``; the dashes (``-`` ``–`` ``—`` ``‐``) become ``-``.  Symbols that stand for words
   (``§`` "paragraf", ``%`` "procento", ``/`` "lomeno", ``+`` ...) and numbers stay words.
2. Several marks after one word: the thesis reduces
   ``w2: „ w3 w4 w5, w6 w7.“`` to ``w2: w3 w4 w5, w6 w7.`` so that each word is followed by
   at most one mark.  We read this as: within a run of marks, quotes are dropped when another
   mark is present, and of what remains the first mark is kept (``?!`` -> ``?``, ``.,`` -> ``.``,
   ``, ,`` -> ``,``).  A quote alone after a word is the ``"`` class (``řekl „ano“ a`` gives
   ``řekl["] ano["] a``), which is how the thesis' ["] class (0.06 % of words) arises.
3. Marks before the first word of a transcript have no word to attach to and are dropped
   (counted in ``ExtractionStats.leading_marks``).
4. Case: ``cap`` if the first character of the word is an upper-case letter (so ``ODS``
   and ``Praha`` are ``cap``; ``6.`` and ``iPhone`` are ``blank``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from punct.labels import CAP, CASE, PUNCT9, QUOTE

# Raw mark -> class; a value of None removes the token (replaced by white space).
PUNCT_MAP: Dict[str, Optional[str]] = {
    ",": ",",
    ".": ".",
    "!": "!",
    "?": "?",
    ":": ":",
    ";": ";",
    "(": ",",
    ")": ",",
    "...": ".",
    "…": ".",
    "-": "-",
    "–": "-",
    "—": "-",
    "‐": "-",
    '"': QUOTE,
    "„": QUOTE,
    "“": QUOTE,
    "”": QUOTE,
    "»": QUOTE,
    "«": QUOTE,
    "\\": None,
    "'": None,
    "’": None,
    "‘": None,
    "‚": None,
    "@": None,
    "`": None,
    "|": None,
}


def is_mark(token: str) -> bool:
    """True for a token that is a punctuation mark of ``PUNCT_MAP`` (kept or removed)."""
    return token in PUNCT_MAP


def normalise_word(word: str) -> str:
    """The form compared with recognised words: lower case, marks at either end stripped."""
    return word.lower().strip("".join(k for k in PUNCT_MAP if len(k) == 1))


def case_label(word: str) -> str:
    return CAP if word[:1].isupper() else CASE.none


def reduce_marks(marks: Sequence[str]) -> str:
    """The class of a run of (already mapped, non-removed) marks after one word; rule 2 above."""
    if not marks:
        return PUNCT9.none
    non_quotes = [m for m in marks if m != QUOTE]
    return non_quotes[0] if non_quotes else QUOTE


class LabeledWord(NamedTuple):
    word: str  # the token as written in the transcript (cased)
    punct: str  # one of PUNCT9.classes
    case: str  # one of CASE.classes
    token_index: int  # position of the word among the input tokens


@dataclass
class ExtractionStats:
    tokens: int = 0
    words: int = 0
    marks: int = 0
    removed_marks: int = 0
    leading_marks: int = 0
    merged_marks: int = 0  # marks dropped because another mark followed the same word

    def add(self, other: "ExtractionStats") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def extract_labels(
    tokens: Iterable[str], stats: Optional[ExtractionStats] = None
) -> List[LabeledWord]:
    """Official transcript tokens -> one (word, punct, case) per word.

    Args:
      tokens: the tokens in order; punctuation marks are tokens of their own.
      stats: counters to update (optional).
    Returns:
      the words with their labels; ``token_index`` points back into ``tokens``.
    """
    stats = stats if stats is not None else ExtractionStats()
    words: List[LabeledWord] = []
    pending: List[str] = []

    def flush() -> None:
        if words and pending:
            last = words[-1]
            words[-1] = last._replace(punct=reduce_marks(pending))
            stats.merged_marks += len(pending) - 1
        pending.clear()

    for i, token in enumerate(tokens):
        stats.tokens += 1
        if not token or token.isspace():
            raise ValueError(f"empty token at position {i}")
        if is_mark(token):
            stats.marks += 1
            mapped = PUNCT_MAP[token]
            if mapped is None:
                stats.removed_marks += 1
            elif not words:
                stats.leading_marks += 1
            else:
                pending.append(mapped)
            continue
        flush()
        words.append(LabeledWord(token, PUNCT9.none, case_label(token), i))
        stats.words += 1
    flush()
    return words


def label_counts(words: Iterable[LabeledWord]) -> Tuple[Dict[str, int], Dict[str, int]]:
    """Counts of each punctuation and case class (all classes present, zeros included)."""
    punct = {c: 0 for c in PUNCT9.classes}
    case = {c: 0 for c in CASE.classes}
    for w in words:
        punct[w.punct] += 1
        case[w.case] += 1
    return punct, case
