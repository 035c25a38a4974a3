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
  * Numbers: a comma followed by exactly three digits inside a number is a thousands separator and
    is deleted ("1,000" -> "1000").  Any other "." "," ":" written directly between two letters/digits
    is not punctuation: it splits the token with no label ("3.5" -> "3" "5", "10:30" -> "10" "30",
    "ted.com" -> "ted" "com").
  * Acronyms with dots ("U.S.", "e.g.") become one word without the dots ("us", "eg"); their final dot
    is part of the acronym, never a full stop.  Abbreviations in ``abbreviations`` (Mr., Mrs., Dr. ...)
    keep their dot to themselves as well.
  * Other symbols (_ * & % $ # / ...) are dropped; they are neither words nor labels.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, NamedTuple, Tuple

from punct.labels import PUNCT4
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
    abbreviations: Tuple[str, ...] = ("mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "mt", "vs")

    def __post_init__(self) -> None:
        for name in ("exclamation", "semicolon", "colon", "ellipsis", "dash", "quote", "bracket"):
            value = getattr(self, name)
            if value not in PUNCT4.classes:
                raise ValueError(f"normalize config: {name} maps to {value!r}, not one of {list(PUNCT4.classes)}")
        if self.events not in ("drop", "keep"):
            raise ValueError(f"normalize config: events must be 'drop' or 'keep', got {self.events!r}")


def mark_table(config: NormalizeConfig = NormalizeConfig()) -> Dict[str, str]:
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
    return "\n".join(lines)


# Marks as written -> canonical mark of mark_table().
_CANONICAL = {
    "...": "…", "…": "…", "—": "-", "–": "-", "-": "-", "“": '"', "”": '"', "«": '"', "»": '"',
    '"': '"', "'": '"', "’": '"', "‘": '"', "[": "(", "]": ")", "(": "(", ")": ")",
    ",": ",", ".": ".", "?": "?", "!": "!", ";": ";", ":": ":",
}

_EVENT_RE = re.compile(r"[(\[]\s*[A-Z][^\W\d_]*(?:\s+[^\W\d_]+){0,3}\s*[)\]]")
_TOKEN_RE = re.compile(
    r"""
    (?P<acronym>(?:[^\W\d_]\.){2,})                  # U.S.  e.g.
    |(?P<number>\d{1,3}(?:,\d{3})+(?!\d|,\d))         # 1,000  12,345,678
    |(?P<word>[^\W_]+)                               # letters and digits
    |(?P<apostrophe>['’‘])
    |(?P<mark>\.\.\.|--+|[…—–\-?!.,;:"“”«»()\[\]])
    |(?P<space>\s+)
    |(?P<other>.)
    """,
    re.VERBOSE | re.DOTALL,
)


class Normalized(NamedTuple):
    words: List[str]  # lowercase, punctuation stripped
    labels: List[str]  # one of PUNCT4.classes per word
    spans: List[Tuple[int, int]]  # character span of each word in the NFKC text


def _is_alnum(ch: str) -> bool:
    return ch.isalnum()


def normalize(text: str, config: NormalizeConfig = NormalizeConfig()) -> Normalized:
    """Words and labels of one segment's text (see the module docstring for the rules)."""
    text = unicodedata.normalize("NFKC", text)
    if config.events == "drop":
        # Blank out events, keeping the character positions of everything else.
        text_for_tokens = _EVENT_RE.sub(lambda m: " " * len(m.group(0)), text)
    else:
        text_for_tokens = text
    table = mark_table(config)
    words: List[str] = []
    labels: List[str] = []
    spans: List[Tuple[int, int]] = []
    tokens = [(m.lastgroup, m.group(0), m.start(), m.end()) for m in _TOKEN_RE.finditer(text_for_tokens)]
    for k, (kind, tok, start, end) in enumerate(tokens):
        before = text_for_tokens[start - 1] if start > 0 else " "
        after = text_for_tokens[end] if end < len(text_for_tokens) else " "
        if kind in ("word", "number", "acronym"):
            if kind == "number":
                word = tok.replace(",", "")
            elif kind == "acronym":
                word = tok.replace(".", "")
            else:
                word = tok
            word = word.lower()
            # "don" + "'" + "t" written together -> one word "don't".
            if (
                k >= 2 and words and tokens[k - 1][0] == "apostrophe" and tokens[k - 1][2] == spans[-1][1]
                and tokens[k - 1][3] == start
            ):
                words[-1] = words[-1] + "'" + word
                spans[-1] = (spans[-1][0], end)
                continue
            words.append(word)
            labels.append(PUNCT4.none)
            spans.append((start, end))
        elif kind == "apostrophe":
            if _is_alnum(before) and _is_alnum(after):
                continue  # inside a word: joined above
            _attach(labels, table['"'])
        elif kind == "mark":
            inside = _is_alnum(before) and _is_alnum(after)
            if tok in (".", ",", ":", "-") and inside:
                continue  # 3.5, 10:30, ted.com, twenty-one: splits the token, no label
            if tok == "." and words and before.isalnum() and words[-1] in config.abbreviations:
                continue  # Mr. keeps its dot
            canon = _CANONICAL["-"] if tok.startswith("--") else _CANONICAL.get(tok, tok)
            _attach(labels, table.get(canon, PUNCT4.none))
        # space and other symbols: nothing
    return Normalized(words, labels, spans)


def _attach(labels: List[str], label: str) -> None:
    """Gives ``label`` to the last word if it is stronger than what the word has."""
    if labels and _PRIORITY[label] > _PRIORITY[labels[-1]]:
        labels[-1] = label


def words_and_labels(text: str, config: NormalizeConfig = NormalizeConfig()) -> Tuple[List[str], List[str]]:
    result = normalize(text, config)
    return result.words, result.labels


def add_normalize_arguments(parser: argparse.ArgumentParser) -> None:
    """The punctuation mark -> label mapping of an English corpus preparation (a YAML file and ``--norm-*`` flags)."""
    parser.add_argument("--normalize-config", type=Path, default=None,
                        help="YAML with NormalizeConfig values (punctuation mark -> label mapping)")
    add_config_arguments(parser, NormalizeConfig, prefix="norm-")
