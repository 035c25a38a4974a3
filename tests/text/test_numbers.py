"""Numbers as spoken words (punct.text.numbers): the forms each language reads, and what it refuses."""

from __future__ import annotations

import pytest

from punct.text.numbers import Unspeakable, cardinal, speak


@pytest.mark.parametrize(
    "token, words",
    [
        ("28", "dvacet osm"),
        ("737", "sedm set třicet sedm"),
        ("1998", "tisíc devět set devadesát osm"),
        ("2008", "dva tisíce osm"),
        ("200", "dvě stě"),
        ("300", "tři sta"),  # hundreds as two words, not "devětset"
        ("3,5", "tři celá pět"),
        ("%", "procent"),
        ("§", "paragraf"),
        ("0044", "nula nula čtyři čtyři"),
    ],
)
def test_czech(token, words):
    assert " ".join(speak(token, "cs")) == words


@pytest.mark.parametrize(
    "token, words",
    [
        ("2,500,000", "two million five hundred thousand"),
        ("101", "one hundred one"),  # no British "and"
        ("1100", "eleven hundred"),
        ("2000", "two thousand"),
        ("2099", "twenty ninety nine"),
        ("$1.00", "one dollar"),
        ("$0.99", "zero dollars ninety nine cents"),
        ("£1.50", "one pound fifty pence"),
        ("12345678901", "one two three four five six seven eight nine zero one"),  # ids: digit by digit
    ],
)
def test_english(token, words):
    assert " ".join(speak(token, "en")) == words


@pytest.mark.parametrize(
    "token, lang, reason",
    [
        ("3.", "cs", "no Czech ordinals"),
        ("3st", "en", "not an ordinal"),
        ("3.5th", "en", "not an ordinal"),
        ("$5%", "en", "currency and percent"),
        ("12a", "cs", "not a Czech number"),
        ("five", "en", "not an English"),
    ],
)
def test_unspeakable(token, lang, reason):
    with pytest.raises(Unspeakable, match=reason) as e:
        speak(token, lang)
    assert e.value.token == token


def test_unknown_language_is_an_error():
    with pytest.raises(ValueError, match="language 'de'"):
        cardinal("5", "de")
