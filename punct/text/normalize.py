"""Text -> (words, per-word punctuation labels): the one place where this rule lives.

Every later stage reads the words and labels stored on the supervisions (``custom["words"]``,
``custom["punct"]``) and never re-derives them, so the rules below are the whole definition.

Words
  * Unicode NFKC, then lowercase; a word is a run of letters/digits (any script).
  * Apostrophes: an apostrophe (' or ’) *between* two letters/digits stays in the word
    ("don't", "emma's", "o'clock"); any other apostrophe is a quote and is dropped
    ("students'" -> "students", "'tis" -> "tis").
  * Hyphens: a single hyphen between two letters/digits splits the word, and the first part takes
    no label ("twenty-one" -> "twenty" "one").  A free-standing hyphen, "--", "—", "–" is a dash mark.
  * Numbers, ``numbers: spoken`` (default): a number token is read as the words a speaker says
    (:mod:`punct.text.numbers`, num2words): cardinals, years, ordinals, decimals, currency, percent
    ("in 2008, we" -> "in two thousand eight, we"; "3.5" -> "three point five"; "$5" -> "five
    dollars"; "50%" -> "fifty percent"; "3rd" -> "third"; "1990s" -> "nineteen nineties").  The spoken
    words run through the word rules here (num2words' "twenty-eight" is two words), all share the
    number's character span, and the mark after the number labels the last of them.  Digits inside a
    word are read as a cardinal and the letters kept ("MP3" -> "mp" "three", "5pm" -> "five" "pm").
    The symbols "&" "+" "=" "@" "%" are read ("and", "plus" ...); formatting symbols (_ * / # \\ | ~ ^
    ` ♪ ♫) are dropped; any other symbol ("§", "©", "°", a lone "$") cannot be spoken and is returned
    in ``Normalized.unspeakable``: stage 0 skips the utterance and counts it ("unspeakable token"),
    punctuate refuses it, and text-only BERT data counts it and goes on without it.
  * Numbers, ``numbers: keep`` (the behaviour before numbers were spoken): a comma followed by exactly
    three digits inside a number is a thousands separator and is deleted ("1,000" -> "1000"); digits
    stay in the words; every symbol (_ * & % $ # / § ...) is dropped.
  * Any other "." "," ":" written directly between two letters/digits is not punctuation: it splits the
    token with no label ("10:30" -> "ten" "thirty" ("10" "30" with keep), "ted.com" -> "ted" "com").
  * Abbreviations: acronyms with dots ("U.S.", "e.g.", "a.m.") become one word without the dots ("us",
    "eg", "am"); their final dot is a full stop only at the end of the text.  Titles in
    ``abbreviations`` (Mr., Mrs., Dr. ...) keep their dot to themselves always.  The words (and acronym
    words) in ``sentence_abbreviations`` (months "Jan." ... "Dec.", "etc.", "a.m.", "p.m.") keep their
    dot unless it ends the text or the next word is capitalised ("on Jan. 5" and "at 9 a.m. we" have
    no full stop; "in Jan. We" has one).  Any other word's dot is a full stop: the lists are what is
    known, not a general abbreviation detector.
  * Bracketed events such as "(Laughter)", "(Applause)", "[Music]" (brackets around one to four
    words, the first capitalised) are removed when ``events == "drop"`` (default) or read as words
    when ``"keep"``; other brackets are marks.

Labels
  The label of a word is decided by the marks between it and the next word (or the end of the
  text), each mark mapped by :func:`mark_table`; when several marks follow a word the strongest
  wins, in the order "?" > "." > "," > "NP".  Marks before the first word are ignored.
"""

from __future__ import annotations

import argparse
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from punct.labels import PUNCT4
from punct.text import numbers as num
from punct.utils.config import add_config_arguments

# Strength of a label when several marks follow one word.
_PRIORITY = {PUNCT4.none: 0, ",": 1, ".": 2, "?": 3}


@dataclass(frozen=True)
class NormalizeConfig:
    """Mapping of punctuation marks to the four classes, and the event/abbreviation rules."""

    exclamation: str = "."  # "!"
    semicolon: str = "."  # ";"
    colon: str = ","  # ":"
    ellipsis: str = "."  # "..." and "…"
    dash: str = PUNCT4.none  # free-standing "-", "--", "—", "–"
    quote: str = PUNCT4.none  # '"', '“', '”', '«', '»', and quoting apostrophes
    bracket: str = PUNCT4.none  # "(", ")", "[", "]" around ordinary text
    events: str = "drop"  # "(Laughter)"-like events: "drop" or "keep" (read as words)
    abbreviations: tuple[str, ...] = ("mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "mt", "vs")
    # Their dot is a full stop only at the end of the text or before a capitalised word (see the module doc).
    sentence_abbreviations: tuple[str, ...] = (
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "etc",
        "am",
        "pm",
    )
    numbers: str = "spoken"  # "spoken": numbers and symbols read as words (punct.text.numbers); "keep": digits stay

    def __post_init__(self) -> None:
        for name in ("exclamation", "semicolon", "colon", "ellipsis", "dash", "quote", "bracket"):
            value = getattr(self, name)
            if value not in PUNCT4.classes:
                raise ValueError(f"normalize config: {name} maps to {value!r}, not one of {list(PUNCT4.classes)}")
        if self.events not in ("drop", "keep"):
            raise ValueError(f"normalize config: events must be 'drop' or 'keep', got {self.events!r}")
        if self.numbers not in num.NUMBERS_MODES:
            raise ValueError(
                f"normalize config: numbers must be one of {list(num.NUMBERS_MODES)}, got {self.numbers!r}"
            )


def mark_table(config: NormalizeConfig = NormalizeConfig()) -> dict[str, str]:
    """Canonical punctuation mark -> label: the single table behind every label."""
    return {
        ",": ",",
        ".": ".",
        "?": "?",
        "!": config.exclamation,
        ";": config.semicolon,
        ":": config.colon,
        "…": config.ellipsis,
        "-": config.dash,
        '"': config.quote,
        "(": config.bracket,
        ")": config.bracket,
    }


def format_mark_table(config: NormalizeConfig = NormalizeConfig()) -> str:
    """The table as printed by data preparation."""
    shown = {"…": "... …", "-": "- -- — –", '"': "\" “ ” « » '", "(": "( [", ")": ") ]"}
    lines = ["punctuation mark -> label (strongest wins: ? > . > , > NP)"]
    for mark, label in mark_table(config).items():
        lines.append(f"  {shown.get(mark, mark):<12} -> {label}")
    lines.append(f"  bracketed events like (Laughter): {config.events}")
    lines.append(f"  abbreviations keeping their dot: {' '.join(config.abbreviations)}")
    lines.append(f"  abbreviations keeping their dot inside a sentence: {' '.join(config.sentence_abbreviations)}")
    lines.append(f"  numbers: {config.numbers}")
    return "\n".join(lines)


# Marks as written -> canonical mark of mark_table().
_CANONICAL = {
    "...": "…",
    "…": "…",
    "—": "-",
    "–": "-",
    "-": "-",
    "“": '"',
    "”": '"',
    "«": '"',
    "»": '"',
    '"': '"',
    "'": '"',
    "’": '"',
    "‘": '"',
    "[": "(",
    "]": ")",
    "(": "(",
    ")": ")",
    ",": ",",
    ".": ".",
    "?": "?",
    "!": "!",
    ";": ";",
    ":": ":",
}

_EVENT_RE = re.compile(r"[(\[]\s*[A-Z][^\W\d_]*(?:\s+[^\W\d_]+){0,3}\s*[)\]]")


def _token_re(number: str) -> re.Pattern:
    """The tokens of running text; ``number``: what a written number is."""
    return re.compile(
        r"""
        (?P<acronym>(?:[^\W\d_]\.){2,})                  # U.S.  e.g.
        |(?P<number>"""
        + number
        + r""")
        |(?P<word>[^\W_]+)                               # letters and digits
        |(?P<apostrophe>['’‘])
        |(?P<mark>\.\.\.|--+|[…—–\-?!.,;:"“”«»()\[\]])
        |(?P<space>\s+)
        |(?P<other>.)
        """,
        re.VERBOSE | re.DOTALL,
    )


_TOKEN_RE = _token_re(r"\d{1,3}(?:,\d{3})+(?!\d|,\d)")  # 1,000  12,345,678 (the digits stay a word)
# numbers: spoken: also 3.5  $5  50%  3rd  1990s  $5 million (punct.text.numbers.NUMBER_EN), said as words
_SPOKEN_TOKEN_RE = _token_re(num.NUMBER_EN)
# numbers: spoken: symbols that are formatting, not words (dropped as before); any other symbol (Unicode
# category S, and §) that punct.text.numbers.SYMBOL_WORDS does not read is unspeakable.
FORMATTING_SYMBOLS = frozenset("_*/#\\|~^`♪♫")


class Normalized(NamedTuple):
    words: list[str]  # lowercase, punctuation stripped
    labels: list[str]  # one of PUNCT4.classes per word
    spans: list[tuple[int, int]]  # character span of each word in the NFKC text (a number's words share one)
    unspeakable: tuple[str, ...] = ()  # tokens that cannot be said (numbers: spoken); the caller skips or refuses


def _unspeakable_symbol(ch: str) -> bool:
    return ch not in FORMATTING_SYMBOLS and (ch == "§" or unicodedata.category(ch).startswith("S"))


def _next_word(tokens, k: int):
    """The first word-like token after position ``k`` (None at the end of the text)."""
    for kind, tok, _, _ in tokens[k + 1 :]:
        if kind in ("word", "number", "acronym"):
            return tok
        if kind == "other" and tok.strip() and tok in num.SYMBOL_WORDS["en"]:
            return tok
    return None


def _dot_ends_sentence(tokens, k: int, word: str, config: NormalizeConfig) -> bool:
    """For an abbreviation at token ``k``: is its dot also a full stop? (see the module doc)."""
    following = _next_word(tokens, k)
    if following is None:
        return True
    return word in config.sentence_abbreviations and following[:1].isupper()


def _is_alnum(ch: str) -> bool:
    return ch.isalnum()


@dataclass
class _WordsSoFar:
    """What :func:`normalize` has read so far: words with their labels and spans, and unspeakable tokens."""

    words: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)
    unspeakable: list[str] = field(default_factory=list)

    def append(self, word: str, start: int, end: int) -> None:
        self.words.append(word)
        self.labels.append(PUNCT4.none)
        self.spans.append((start, end))


def normalize(text: str, config: NormalizeConfig = NormalizeConfig()) -> Normalized:
    """Words and labels of one segment's text (see the module docstring for the rules)."""
    text = unicodedata.normalize("NFKC", text)
    text_for_tokens = _blank_events(text) if config.events == "drop" else text
    table = mark_table(config)
    spoken = config.numbers == "spoken"
    out = _WordsSoFar()
    token_re = _SPOKEN_TOKEN_RE if spoken else _TOKEN_RE
    tokens = [(m.lastgroup, m.group(0), m.start(), m.end()) for m in token_re.finditer(text_for_tokens)]
    for k, (kind, tok, start, end) in enumerate(tokens):
        before = text_for_tokens[start - 1] if start > 0 else " "
        after = text_for_tokens[end] if end < len(text_for_tokens) else " "
        if spoken and (kind == "number" or (kind == "word" and num.has_digit(tok))):
            _add_spoken_number(out, kind, tok, start, end)
        elif kind in ("word", "number", "acronym"):
            _add_word(out, tokens, k, config, table)
        elif kind == "apostrophe":
            if not (_is_alnum(before) and _is_alnum(after)):  # inside a word: joined by _add_word
                _attach(out.labels, table['"'])
        elif kind == "mark":
            if not _mark_is_silent(out.words, tokens, k, before, after, config):
                canon = _CANONICAL["-"] if tok.startswith("--") else _CANONICAL.get(tok, tok)
                _attach(out.labels, table.get(canon, PUNCT4.none))
        elif kind == "other" and spoken and tok in num.SYMBOL_WORDS["en"]:
            out.append(num.SYMBOL_WORDS["en"][tok], start, end)
        elif kind == "other" and spoken and _unspeakable_symbol(tok):
            out.unspeakable.append(f"{tok} (a symbol with no spoken form)")
        # space and other symbols: nothing
    return Normalized(out.words, out.labels, out.spans, tuple(out.unspeakable))


def _blank_events(text: str) -> str:
    """``text`` with its events blanked out, keeping the character positions of everything else."""
    return _EVENT_RE.sub(lambda m: " " * len(m.group(0)), text)


def _add_spoken_number(out: _WordsSoFar, kind: str, tok: str, start: int, end: int) -> None:
    """The words a number (or a word with digits) is said as, all with the token's span (numbers: spoken)."""
    try:
        said = num.speak(tok, "en") if kind == "number" else [w for w, _ in num.mixed(tok, "en")]
    except num.Unspeakable as e:
        out.unspeakable.append(f"{tok} ({e.reason})")
        return
    for w in said:
        out.words.extend(num.words_of(w) if kind == "number" else [w.lower()])
    out.labels.extend([PUNCT4.none] * (len(out.words) - len(out.labels)))
    out.spans.extend([(start, end)] * (len(out.words) - len(out.spans)))


def _add_word(out: _WordsSoFar, tokens, k: int, config: NormalizeConfig, table: dict[str, str]) -> None:
    """A word, number (written) or acronym token: a new word, or the end of a word written with an apostrophe."""
    kind, tok, start, end = tokens[k]
    if kind == "number":
        word = tok.replace(",", "")
    elif kind == "acronym":
        word = tok.replace(".", "")
    else:
        word = tok
    word = word.lower()
    words, spans = out.words, out.spans
    # "don" + "'" + "t" written together -> one word "don't".
    if (
        k >= 2
        and words
        and tokens[k - 1][0] == "apostrophe"
        and tokens[k - 1][2] == spans[-1][1]
        and tokens[k - 1][3] == start
    ):
        words[-1] = words[-1] + "'" + word
        joined, j = spans[-1], len(spans) - 1
        while j >= 0 and spans[j] == joined:  # all words of a spoken number keep one span
            spans[j] = (joined[0], end)
            j -= 1
        return
    out.append(word, start, end)
    if kind == "acronym" and _dot_ends_sentence(tokens, k, word, config):
        _attach(out.labels, table["."])


def _mark_is_silent(words: list[str], tokens, k: int, before: str, after: str, config: NormalizeConfig) -> bool:
    """Whether the mark at token ``k`` gives no label: it is part of a token or of an abbreviation."""
    tok = tokens[k][1]
    if tok in (".", ",", ":", "-") and _is_alnum(before) and _is_alnum(after):
        return True  # 3.5 (keep), 10:30, ted.com, twenty-one: splits the token, no label
    if tok == "." and words and before.isalnum() and words[-1] in config.abbreviations:
        return True  # Mr. keeps its dot
    # "on Jan. 5", "etc. and": the dot belongs to the abbreviation
    return bool(
        tok == "."
        and words
        and before.isalnum()
        and words[-1] in config.sentence_abbreviations
        and not _dot_ends_sentence(tokens, k, words[-1], config)
    )


def _attach(labels: list[str], label: str) -> None:
    """Gives ``label`` to the last word if it is stronger than what the word has."""
    if labels and _PRIORITY[label] > _PRIORITY[labels[-1]]:
        labels[-1] = label


def words_and_labels(text: str, config: NormalizeConfig = NormalizeConfig()) -> tuple[list[str], list[str]]:
    result = normalize(text, config)
    return result.words, result.labels


def add_normalize_arguments(parser: argparse.ArgumentParser) -> None:
    """The punctuation mark -> label mapping of an English corpus preparation (a YAML file and ``--norm-*`` flags)."""
    parser.add_argument(
        "--normalize-config",
        type=Path,
        default=None,
        help="YAML with NormalizeConfig values (punctuation mark -> label mapping)",
    )
    add_config_arguments(parser, NormalizeConfig, prefix="norm-")
