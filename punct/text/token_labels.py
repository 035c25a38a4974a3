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
5. Numbers (``numbers="spoken"``, the default; not in the thesis, which kept digits): a word token with
   digits, or a symbol that stands for a word (``%`` ``§`` ``/`` ``+``), becomes the words a speaker says
   (:func:`punct.text.numbers.speak`, num2words' Czech: ``1998`` -> ``tisíc devět set devadesát osm``,
   ``3,5`` -> ``tři celá pět``, ``%`` -> ``procent``), so that it matches the recognised words.  The token's
   punctuation label goes to the last spoken word (rule 2 applies to it as to any word), and every spoken
   word has case ``blank`` (a number has no case, as ``6.`` above).  A token mixing letters and digits is
   read run by run (``LC-10`` -> ``LC`` (cap) ``deset``, ``10%`` -> ``deset procent``; ``-`` ``.`` ``,``
   between runs only separate them).
   What cannot be said (a Czech ordinal ``6.``: num2words 0.5.14 has no Czech ordinals; another symbol
   inside a token) stays as written, is counted in ``ExtractionStats.unspeakable`` and logged; it then
   matches no recognised word.  ``numbers="keep"``: every token stays as written (the thesis' rule).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from punct.labels import CAP, CASE, PUNCT9, QUOTE
from punct.text import numbers as num

logger = logging.getLogger(__name__)

# Raw mark -> class; a value of None removes the token (replaced by white space).
PUNCT_MAP: dict[str, str | None] = {
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
    spoken_numbers: int = 0  # tokens with digits or word symbols said as words (numbers="spoken")
    unspeakable: int = 0  # such tokens that could not be said: kept as written (logged)

    def add(self, other: ExtractionStats) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


_RUN = re.compile(r"\d+|[^\W\d_]+|[-.,]|.", re.DOTALL)


def spoken_words(token: str, numbers: str = "spoken") -> list[tuple[str, str]]:
    """(word, case label) of one word token (rule 5 above).

    Raises:
      punct.text.numbers.Unspeakable: the token (with digits or a symbol) cannot be said.
    """
    if numbers not in num.NUMBERS_MODES:
        raise ValueError(f"numbers must be one of {list(num.NUMBERS_MODES)}, got {numbers!r}")
    if numbers == "keep" or not (num.has_digit(token) or token in num.SYMBOL_WORDS["cs"]):
        return [(token, case_label(token))]
    if token in num.SYMBOL_WORDS["cs"] or num.CZECH_NUMBER.fullmatch(token):
        return [(w, CASE.none) for w in num.speak(token, "cs")]
    out: list[tuple[str, str]] = []
    for run in _RUN.findall(token):
        if run.isdigit():
            out += [(w, CASE.none) for w in num.cardinal(run, "cs")]
        elif run.isalpha():
            out.append((run, case_label(run)))
        elif run in num.SYMBOL_WORDS["cs"]:
            out.append((num.SYMBOL_WORDS["cs"][run], CASE.none))
        elif run not in "-.,":
            raise num.Unspeakable(token, f"{run!r} inside a word has no spoken form")
    return out


def extract_labels(
    tokens: Iterable[str],
    stats: ExtractionStats | None = None,
    numbers: str = "spoken",
) -> list[LabeledWord]:
    """Official transcript tokens -> one (word, punct, case) per word.

    Args:
      tokens: the tokens in order; punctuation marks are tokens of their own.
      stats: counters to update (optional).
      numbers: "spoken" (numbers and word symbols said as words, rule 5) or "keep" (as written).
    Returns:
      the words with their labels; ``token_index`` points back into ``tokens`` (the words of one
      spoken number share it).
    """
    stats = stats if stats is not None else ExtractionStats()
    words: list[LabeledWord] = []
    pending: list[str] = []

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
        try:
            said = spoken_words(token, numbers)
        except num.Unspeakable as e:
            stats.unspeakable += 1
            if stats.unspeakable <= 5:
                logger.warning("token %d %r cannot be said as words (%s): kept as written", i, token, e.reason)
            said = [(token, case_label(token))]
        else:
            stats.spoken_numbers += said != [(token, case_label(token))]
        words += [LabeledWord(w, PUNCT9.none, case, i) for w, case in said]
        stats.words += len(said)
    flush()
    return words


def label_counts(words: Iterable[LabeledWord]) -> tuple[dict[str, int], dict[str, int]]:
    """Counts of each punctuation and case class (all classes present, zeros included)."""
    punct = {c: 0 for c in PUNCT9.classes}
    case = {c: 0 for c in CASE.classes}
    for w in words:
        punct[w.punct] += 1
        case[w.case] += 1
    return punct, case
