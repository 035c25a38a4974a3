"""Numbers and number-like symbols as spoken words (num2words), for every text path of both recipes.

Digits are outside the acoustic model's alphabet: a written "28" cannot be aligned to the speech that says
"twenty-eight", and an utterance holding one used to leave training and scoring.  :func:`speak` turns one
written number token into the words a speaker says, with `num2words <https://pypi.org/project/num2words/>`_
for the number words themselves; :mod:`punct.text.normalize` (English running text) and
:mod:`punct.text.token_labels` (tokenised Czech transcripts) call it, so each style has one path.

What is read, per language (``en``: English; ``cs``: Czech)

=================  ================================  ===========================================
written            en                                cs
=================  ================================  ===========================================
cardinal           "28" -> twenty eight              "28" -> dvacet osm
thousands          "1,000" -> one thousand           ("1 000" is two tokens in UDPipe's output)
year               "1998" -> nineteen ninety eight   "1998" -> tisíc devět set devadesát osm
                   (1100-1999, 2010-2099 as years;   (a cardinal: that is how Czech reads years)
                   2000-2009 "two thousand eight")
decimal            "3.5" -> three point five         "3,5" -> tři celá pět
ordinal            "3rd" -> third                    "3." -> unspeakable (num2words 0.5.14 has no
                                                     Czech ordinals; counted, see below)
plural of number   "1990s" -> nineteen nineties      -
percent            "50%" -> fifty percent            "%" token -> procent
currency           "$5" -> five dollars,             "Kč" is a word of its own in Czech text
                   "$5.50" -> five dollars fifty     (the tokeniser splits it off)
                   cents, "$5 million" -> five
                   million dollars (also € £)
long digit string  "0044", 10+ digits: digit by digit
=================  ================================  ===========================================

The words are lowercase and split by the caller's own word rule (num2words writes "twenty-eight" and
"one thousand, two hundred": the hyphen and the comma separate words and are not punctuation).  Two
readings differ from num2words' output on purpose: English drops num2words' British "and" ("two thousand
eight", the American reading heard in TED talks and from espeak), and Czech hundreds are two words ("devět
set", the standard spelling, also the mini corpus' speech; num2words writes "devětset").

A token that cannot be read raises :class:`Unspeakable`; callers count it (an utterance skip in egs/mustc
stage 0, a counted token in egs/parczech stage 0) and log it, and never keep the digits silently.
"""

from __future__ import annotations

import re

from num2words import num2words

LANGUAGES = ("en", "cs")  # our names; num2words calls Czech "cs" as well (0.5.14; older versions: "cz")
NUMBERS_MODES = ("spoken", "keep")  # the ``numbers`` option of the text configs

# English number token as written in running text: optional currency, digits (with thousands commas),
# optional decimals, then an ordinal/plural suffix or a percent sign; never followed by a letter or digit.
CURRENCY_EN: dict[str, tuple[str, str]] = {"$": ("dollar", "dollars"), "€": ("euro", "euros"), "£": ("pound", "pounds")}
SCALES_EN = ("hundred", "thousand", "million", "billion", "trillion")
NUMBER_EN = (
    r"(?:[$€£]\s?)?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:st|nd|rd|th|s|\s?%)?(?![^\W_])"
    r"(?:(?<=\d)\s+(?:" + "|".join(SCALES_EN) + r")\b)?"
)
_PARSE_EN = re.compile(
    r"(?P<cur>[$€£])?\s?(?P<int>\d{1,3}(?:,\d{3})+|\d+)(?:\.(?P<frac>\d+))?"
    r"(?:(?P<ord>st|nd|rd|th)|(?P<plural>s)|\s?(?P<pct>%))?(?:\s+(?P<scale>[a-z]+))?",
    re.IGNORECASE,
)
# Czech number token (UDPipe keeps "3,5" and "6." together): digits, decimal comma, an ordinal's dot.
CZECH_NUMBER = re.compile(r"(?P<int>\d+)(?:,(?P<frac>\d+))?(?P<ord>\.)?")

# Symbols that stand for words.  English symbols not listed here are handled by normalize.py (dropped as
# formatting, or unspeakable); Czech ones are the mini corpus' readings (punct.corpora.mini_czech).
SYMBOL_WORDS: dict[str, dict[str, str]] = {
    "en": {"%": "percent", "&": "and", "+": "plus", "=": "equals", "@": "at"},
    "cs": {"%": "procent", "§": "paragraf", "/": "lomeno", "+": "plus"},
}
MAX_CARDINAL_DIGITS = 9  # longer digit strings (ids, phone numbers) are read digit by digit
_CS_HUNDREDS = re.compile(r"^(dvě)(stě)$|^(tři|čtyři)(sta)$|^(pět|šest|sedm|osm|devět)(set)$")
_WORD = re.compile(r"[^\W\d_]+")


class Unspeakable(ValueError):
    """A token that :func:`speak` cannot read, with the reason."""

    def __init__(self, token: str, reason: str) -> None:
        super().__init__(f"{token!r}: {reason}")
        self.token = token
        self.reason = reason


def _check(lang: str) -> None:
    if lang not in LANGUAGES:
        raise ValueError(f"numbers: language {lang!r} is not one of {list(LANGUAGES)}")


def words_of(spoken: str) -> list[str]:
    """num2words' text -> lowercase words: letters only ("twenty-eight," -> twenty, eight)."""
    return [w.lower() for w in _WORD.findall(spoken)]


def _fix(words: list[str], lang: str) -> list[str]:
    if lang == "en":
        return [w for w in words if w != "and"]
    out: list[str] = []
    for w in words:
        m = _CS_HUNDREDS.match(w)
        out += [g for g in m.groups() if g] if m else [w]
    return out


def cardinal(digits: str, lang: str) -> list[str]:
    """The words of a digit string ("28" -> twenty eight); leading zeros and long strings digit by digit."""
    _check(lang)
    if not digits.isdigit():
        raise Unspeakable(digits, "not a digit string")
    if (len(digits) > 1 and digits[0] == "0") or len(digits) > MAX_CARDINAL_DIGITS:
        return [w for d in digits for w in _fix(words_of(num2words(int(d), lang=lang)), lang)]
    return _fix(words_of(num2words(int(digits), lang=lang)), lang)


def _decimal(whole: str, frac: str, lang: str) -> list[str]:
    point = {"en": ["point"], "cs": ["celá"]}[lang]
    if lang == "cs":
        # num2words' Czech reads the fraction as a number ("3,25" -> tři celá dvacet pět), as Czechs do.
        return cardinal(whole, lang) + point + cardinal(frac, lang)
    return cardinal(whole, lang) + point + [w for d in frac for w in cardinal(d, lang)]


def _plural_en(words: list[str]) -> list[str]:
    last = words[-1]
    return words[:-1] + [last[:-1] + "ies" if last.endswith("y") else last + "s"]


def speak(token: str, lang: str) -> list[str]:
    """The spoken words of one written number token (see the module doc for the forms).

    Raises:
      Unspeakable: the token is not a number form this language reads.
    """
    _check(lang)
    token = token.strip()
    if token in SYMBOL_WORDS[lang]:
        return [SYMBOL_WORDS[lang][token]]
    if lang == "cs":
        m = CZECH_NUMBER.fullmatch(token)
        if not m:
            raise Unspeakable(token, "not a Czech number form (digits, decimal comma)")
        if m.group("ord"):
            raise Unspeakable(token, "Czech ordinal: num2words has no Czech ordinals")
        return _decimal(m.group("int"), m.group("frac"), lang) if m.group("frac") else cardinal(m.group("int"), lang)
    m = _PARSE_EN.fullmatch(token)
    if not m:
        raise Unspeakable(token, "not an English number form")
    digits = m.group("int").replace(",", "")
    frac, cur, scale = m.group("frac"), m.group("cur"), m.group("scale")
    if scale is not None and (cur is None or scale.lower() not in SCALES_EN):
        raise Unspeakable(token, "a scale word only follows a currency amount")
    if m.group("ord"):
        if frac or cur or not _ordinal_suffix_ok(digits, m.group("ord").lower()):
            raise Unspeakable(token, "not an ordinal (1st 2nd 3rd 4th ...)")
        return _fix(words_of(num2words(int(digits), lang="en", to="ordinal")), lang)
    if m.group("plural"):
        if frac or cur:
            raise Unspeakable(token, "a plural of a decimal or an amount")
        return _plural_en(_number_en(digits, year_ok=True))
    if cur:
        if m.group("pct"):
            raise Unspeakable(token, "currency and percent at once")
        singular, plural = CURRENCY_EN[cur]
        if frac and len(frac) == 2 and not scale:  # $5.50: five dollars fifty cents
            cents = [] if int(frac) == 0 else cardinal(str(int(frac)), lang) + [{"£": "pence"}.get(cur, "cents")]
            return cardinal(digits, lang) + [singular if digits == "1" else plural] + cents
        amount = _decimal(digits, frac, lang) if frac else cardinal(digits, lang)
        unit = singular if digits == "1" and not frac and not scale else plural
        return amount + ([scale.lower()] if scale else []) + [unit]
    words = _decimal(digits, frac, lang) if frac else _number_en(digits, year_ok="," not in m.group("int"))
    return words + (["percent"] if m.group("pct") else [])


def _ordinal_suffix_ok(digits: str, suffix: str) -> bool:
    n = int(digits)
    want = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return suffix == want


def _number_en(digits: str, year_ok: bool) -> list[str]:
    """A cardinal, or a year for four digits in 1100-1999 and 2010-2099 ("nineteen ninety eight")."""
    n = int(digits)
    if year_ok and len(digits) == 4 and (1100 <= n <= 1999 or 2010 <= n <= 2099):
        return _fix(words_of(num2words(n, lang="en", to="year")), "en")
    return cardinal(digits, "en")


def has_digit(text: str) -> bool:
    return any(ch.isdigit() for ch in text)


def mixed(token: str, lang: str) -> list[tuple[str, bool]]:
    """A token of letters and digits ("MP3", "LC10", "5pm") -> its runs, each (words, spoken):
    letter runs as written, digit runs as cardinals."""
    out: list[tuple[str, bool]] = []
    for run in re.findall(r"\d+|[^\W\d_]+", token):
        if run.isdigit():
            out += [(w, True) for w in cardinal(run, lang)]
        else:
            out.append((run, False))
    return out
