"""Words and labels from text: every rule of punct.text.normalize, one test each."""

from __future__ import annotations

import re

import pytest

from punct.labels import PUNCT4
from punct.text.normalize import NormalizeConfig, format_mark_table, mark_table, normalize, words_and_labels


def pairs(text, config=NormalizeConfig()):
    words, labels = words_and_labels(text, config)
    return list(zip(words, labels))


def test_basic_marks_label_the_preceding_word():
    assert pairs("Well, it is done. Is it?") == [
        ("well", ","),
        ("it", "NP"),
        ("is", "NP"),
        ("done", "."),
        ("is", "NP"),
        ("it", "?"),
    ]


def test_default_mapping_of_other_marks():
    assert pairs("Stop! Then; go: now") == [("stop", "."), ("then", "."), ("go", ","), ("now", "NP")]
    assert pairs("wait... and") == [("wait", "."), ("and", "NP")]
    assert pairs("wait… and") == [("wait", "."), ("and", "NP")]


def test_mapping_is_configurable():
    cfg = NormalizeConfig(exclamation="NP", semicolon=",", colon=".", dash=",")
    assert pairs("Stop! Then; go: now -- yes", cfg) == [
        ("stop", "NP"),
        ("then", ","),
        ("go", "."),
        ("now", ","),
        ("yes", "NP"),
    ]


def test_invalid_mapping_is_an_error_naming_the_field():
    with pytest.raises(ValueError, match="colon"):
        NormalizeConfig(colon="!")
    with pytest.raises(ValueError, match="events"):
        NormalizeConfig(events="remove")


def test_strongest_mark_wins():
    assert pairs('He asked, "Why?" and left.') == [
        ("he", "NP"),
        ("asked", ","),
        ("why", "?"),
        ("and", "NP"),
        ("left", "."),
    ]
    assert pairs("Really?! Yes.") == [("really", "?"), ("yes", ".")]
    assert pairs("so, -- then") == [("so", ","), ("then", "NP")]


def test_marks_before_the_first_word_are_ignored():
    assert pairs('... "Hello," she said.') == [("hello", ","), ("she", "NP"), ("said", ".")]
    assert pairs("?!") == []


def test_apostrophes_inside_words_stay_quotes_go():
    assert pairs("Don't touch Emma's o'clock book.") == [
        ("don't", "NP"),
        ("touch", "NP"),
        ("emma's", "NP"),
        ("o'clock", "NP"),
        ("book", "."),
    ]
    assert pairs("the students' rooms, 'tis true") == [
        ("the", "NP"),
        ("students", "NP"),
        ("rooms", ","),
        ("tis", "NP"),
        ("true", "NP"),
    ]
    assert pairs("It’s fine.") == [("it's", "NP"), ("fine", ".")]


def test_hyphens_split_words_dashes_are_marks():
    assert pairs("twenty-one years") == [("twenty", "NP"), ("one", "NP"), ("years", "NP")]
    assert pairs("I would--I do") == [("i", "NP"), ("would", "NP"), ("i", "NP"), ("do", "NP")]
    assert pairs("I would -- I do", NormalizeConfig(dash=",")) == [
        ("i", "NP"),
        ("would", ","),
        ("i", "NP"),
        ("do", "NP"),
    ]
    assert pairs("yes — no – maybe - so", NormalizeConfig(dash=".")) == [
        ("yes", "."),
        ("no", "."),
        ("maybe", "."),
        ("so", "NP"),
    ]


KEEP = NormalizeConfig(numbers="keep")


def test_numbers_kept_as_written():
    assert pairs("It costs 1,000 dollars.", KEEP) == [("it", "NP"), ("costs", "NP"), ("1000", "NP"), ("dollars", ".")]
    assert pairs("We had 1,000, then 2,500,000.", KEEP) == [
        ("we", "NP"),
        ("had", "NP"),
        ("1000", ","),
        ("then", "NP"),
        ("2500000", "."),
    ]
    assert pairs("Pi is 3.14, at 10:30 sharp.", KEEP) == [
        ("pi", "NP"),
        ("is", "NP"),
        ("3", "NP"),
        ("14", ","),
        ("at", "NP"),
        ("10", "NP"),
        ("30", "NP"),
        ("sharp", "."),
    ]
    assert pairs("In 1990 and 2000s: 3D.", KEEP) == [
        ("in", "NP"),
        ("1990", "NP"),
        ("and", "NP"),
        ("2000s", ","),
        ("3d", "."),
    ]
    assert pairs("1, 2, 3.", KEEP) == [("1", ","), ("2", ","), ("3", ".")]
    assert normalize("§ 5 ©", KEEP).unspeakable == ()  # keep: symbols dropped, as before


def test_numbers_spoken_mark_on_the_last_word():
    assert pairs("in 2008, we") == [("in", "NP"), ("two", "NP"), ("thousand", "NP"), ("eight", ","), ("we", "NP")]
    assert pairs("It costs 1,000 dollars.") == [
        ("it", "NP"),
        ("costs", "NP"),
        ("one", "NP"),
        ("thousand", "NP"),
        ("dollars", "."),
    ]
    assert pairs("We had 1,000, then 2,500,000?") == [
        ("we", "NP"),
        ("had", "NP"),
        ("one", "NP"),
        ("thousand", ","),
        ("then", "NP"),
        ("two", "NP"),
        ("million", "NP"),
        ("five", "NP"),
        ("hundred", "NP"),
        ("thousand", "?"),
    ]
    assert pairs("1, 2, 3.") == [("one", ","), ("two", ","), ("three", ".")]


@pytest.mark.parametrize(
    "text, words",
    [
        ("28", "twenty eight"),  # num2words' hyphen splits the words, as the hyphen rule does
        ("1998", "nineteen ninety eight"),
        ("2008", "two thousand eight"),
        ("2020", "twenty twenty"),
        ("3.5", "three point five"),
        ("3.14", "three point one four"),
        ("3rd", "third"),
        ("21st", "twenty first"),
        ("11th", "eleventh"),
        ("1990s", "nineteen nineties"),
        ("80s", "eighties"),
        ("$5", "five dollars"),
        ("$1", "one dollar"),
        ("$5.50", "five dollars fifty cents"),
        ("£2", "two pounds"),
        ("€3", "three euros"),
        ("$5 million", "five million dollars"),
        ("50%", "fifty percent"),
        ("3.5%", "three point five percent"),
        ("10:30", "ten thirty"),
        ("MP3", "mp three"),
        ("5pm", "five pm"),
        ("COVID-19", "covid nineteen"),
        ("Rock & roll", "rock and roll"),
        ("007", "zero zero seven"),
    ],
)
def test_numbers_spoken(text, words):
    result = normalize(text)
    assert " ".join(result.words) == words and result.unspeakable == ()
    assert all(re.fullmatch(r"[a-z]+", w) for w in result.words)  # the English AM alphabet, no digits


def test_spoken_number_words_share_the_span_of_the_written_number():
    text = "It was 3.5, then $5 million."
    result = normalize(text)
    spans = {text[a:b] for (a, b), w in zip(result.spans, result.words) if w in ("three", "point", "five")}
    assert spans == {"3.5", "$5 million"}
    assert result.labels[result.words.index("point") + 1] == ","


def test_unspeakable_symbols_are_returned_not_dropped():
    result = normalize("See § 5 © 2020, ok.")
    assert result.unspeakable == ("§ (a symbol with no spoken form)", "© (a symbol with no spoken form)")
    assert result.words == ["see", "five", "twenty", "twenty", "ok"]
    assert normalize("3st place").unspeakable == ("3st (not an ordinal (1st 2nd 3rd 4th ...))",)
    assert normalize("Rock *and* roll_ #1").unspeakable == ()  # formatting symbols: dropped


def test_numbers_option_is_checked():
    with pytest.raises(ValueError, match="numbers"):
        NormalizeConfig(numbers="digits")


def test_acronyms_abbreviations_and_dotted_names():
    assert pairs("The U.S. is big.") == [("the", "NP"), ("us", "NP"), ("is", "NP"), ("big", ".")]
    assert pairs("Mr. Darcy and Mrs. Bennet met Dr. Who.") == [
        ("mr", "NP"),
        ("darcy", "NP"),
        ("and", "NP"),
        ("mrs", "NP"),
        ("bennet", "NP"),
        ("met", "NP"),
        ("dr", "NP"),
        ("who", "."),
    ]
    assert pairs("Go to ted.com now.") == [("go", "NP"), ("to", "NP"), ("ted", "NP"), ("com", "NP"), ("now", ".")]
    assert pairs("Mr. Darcy", NormalizeConfig(abbreviations=())) == [("mr", "."), ("darcy", "NP")]


@pytest.mark.parametrize(
    "text, expected",
    [
        # A month's dot is a full stop only at the end or before a capitalised word (not a number).
        (
            "We met on Jan. 5, 2008, in Paris.",
            [
                ("we", "NP"),
                ("met", "NP"),
                ("on", "NP"),
                ("jan", "NP"),
                ("five", ","),
                ("two", "NP"),
                ("thousand", "NP"),
                ("eight", ","),
                ("in", "NP"),
                ("paris", "."),
            ],
        ),
        (
            "It was in Jan. We left.",
            [("it", "NP"), ("was", "NP"), ("in", "NP"), ("jan", "."), ("we", "NP"), ("left", ".")],
        ),
        ("apples, etc. and pears", [("apples", ","), ("etc", "NP"), ("and", "NP"), ("pears", "NP")]),
        ("born in Jan.", [("born", "NP"), ("in", "NP"), ("jan", ".")]),
        # a.m. is an acronym: a full stop at the end, before a capital (it is in sentence_abbreviations), else none.
        ("At 9 a.m. we left.", [("at", "NP"), ("nine", "NP"), ("am", "NP"), ("we", "NP"), ("left", ".")]),
        ("We left at 9 a.m.", [("we", "NP"), ("left", "NP"), ("at", "NP"), ("nine", "NP"), ("am", ".")]),
        (
            "It was 9 p.m. Then we left",
            [("it", "NP"), ("was", "NP"), ("nine", "NP"), ("pm", "."), ("then", "NP"), ("we", "NP"), ("left", "NP")],
        ),
        # Other acronyms: a full stop only at the end of the text ("U.S. Army" is one sentence).
        ("The U.S. Army is big.", [("the", "NP"), ("us", "NP"), ("army", "NP"), ("is", "NP"), ("big", ".")]),
        ("He lives in the U.S.", [("he", "NP"), ("lives", "NP"), ("in", "NP"), ("the", "NP"), ("us", ".")]),
    ],
)
def test_abbreviation_dots_are_not_full_stops_inside_a_sentence(text, expected):
    assert pairs(text) == expected


def test_bracketed_events_dropped_or_kept():
    text = "It works. (Laughter) And then, (Applause) it stops."
    assert pairs(text) == [("it", "NP"), ("works", "."), ("and", "NP"), ("then", ","), ("it", "NP"), ("stops", ".")]
    kept = pairs(text, NormalizeConfig(events="keep"))
    assert ("laughter", "NP") in kept and ("applause", "NP") in kept
    assert pairs("(Applause)") == []
    assert pairs("[Music] Hi.") == [("hi", ".")]
    # Ordinary parentheses are marks: the words inside stay.
    assert pairs("the house (which was old) fell.") == [
        ("the", "NP"),
        ("house", "NP"),
        ("which", "NP"),
        ("was", "NP"),
        ("old", "NP"),
        ("fell", "."),
    ]


def test_symbols_are_dropped_and_unicode_letters_kept():
    assert pairs("Rock & roll, 50% off_ *now*", KEEP) == [
        ("rock", "NP"),
        ("roll", ","),
        ("50", "NP"),
        ("off", "NP"),
        ("now", "NP"),
    ]
    assert pairs("Rock & roll, 50% off_ *now*") == [
        ("rock", "NP"),
        ("and", "NP"),
        ("roll", ","),
        ("fifty", "NP"),
        ("percent", "NP"),
        ("off", "NP"),
        ("now", "NP"),
    ]
    assert pairs("Café Über naïve.") == [("café", "NP"), ("über", "NP"), ("naïve", ".")]


def test_spans_point_at_the_words():
    text = 'She said, "Don\'t go -- twenty-one times!" (Laughter) OK?'
    result = normalize(text)
    assert len(result.words) == len(result.labels) == len(result.spans)
    for word, (a, b) in zip(result.words, result.spans):
        assert text[a:b].lower().replace("’", "'") == word


@pytest.mark.parametrize(
    "text",
    [
        'A quick test, with all sorts -- of marks; really! Isn\'t it? (Applause) 3.5% of 1,000: "yes".',
        "“Curly quotes,” she said… and ‘single’ ones—dashes.",
        "",
        "   ",
        "?",
        "x",
    ],
)
def test_invariants(text):
    words, labels = words_and_labels(text)
    assert len(words) == len(labels)
    assert all(label in PUNCT4.classes for label in labels)
    assert all(re.fullmatch(r"[^\W_]+(?:'[^\W_]+)*", w) for w in words), words
    assert all(w == w.lower() for w in words)
    assert not any(ch.isdigit() for w in words for ch in w)  # numbers: spoken (default)


def test_table_is_printed_with_every_mark():
    table = format_mark_table(NormalizeConfig(colon="."))
    for mark in mark_table():
        assert mark in table or mark in '…-"()'
    assert ":            -> ." in table
    assert "(Laughter): drop" in table
    assert "numbers: spoken" in table and "jan feb" in table
