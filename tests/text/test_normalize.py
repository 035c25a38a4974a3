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
        ("well", ","), ("it", "NP"), ("is", "NP"), ("done", "."), ("is", "NP"), ("it", "?")]


def test_default_mapping_of_other_marks():
    assert pairs("Stop! Then; go: now") == [("stop", "."), ("then", "."), ("go", ","), ("now", "NP")]
    assert pairs("wait... and") == [("wait", "."), ("and", "NP")]
    assert pairs("wait… and") == [("wait", "."), ("and", "NP")]


def test_mapping_is_configurable():
    cfg = NormalizeConfig(exclamation="NP", semicolon=",", colon=".", dash=",")
    assert pairs("Stop! Then; go: now -- yes", cfg) == [
        ("stop", "NP"), ("then", ","), ("go", "."), ("now", ","), ("yes", "NP")]


def test_invalid_mapping_is_an_error_naming_the_field():
    with pytest.raises(ValueError, match="colon"):
        NormalizeConfig(colon="!")
    with pytest.raises(ValueError, match="events"):
        NormalizeConfig(events="remove")


def test_strongest_mark_wins():
    assert pairs('He asked, "Why?" and left.') == [
        ("he", "NP"), ("asked", ","), ("why", "?"), ("and", "NP"), ("left", ".")]
    assert pairs("Really?! Yes.") == [("really", "?"), ("yes", ".")]
    assert pairs("so, -- then") == [("so", ","), ("then", "NP")]


def test_marks_before_the_first_word_are_ignored():
    assert pairs('... "Hello," she said.') == [("hello", ","), ("she", "NP"), ("said", ".")]
    assert pairs("?!") == []


def test_apostrophes_inside_words_stay_quotes_go():
    assert pairs("Don't touch Emma's o'clock book.") == [
        ("don't", "NP"), ("touch", "NP"), ("emma's", "NP"), ("o'clock", "NP"), ("book", ".")]
    assert pairs("the students' rooms, 'tis true") == [
        ("the", "NP"), ("students", "NP"), ("rooms", ","), ("tis", "NP"), ("true", "NP")]
    assert pairs("It’s fine.") == [("it's", "NP"), ("fine", ".")]


def test_hyphens_split_words_dashes_are_marks():
    assert pairs("twenty-one years") == [("twenty", "NP"), ("one", "NP"), ("years", "NP")]
    assert pairs("I would--I do") == [("i", "NP"), ("would", "NP"), ("i", "NP"), ("do", "NP")]
    assert pairs("I would -- I do", NormalizeConfig(dash=",")) == [("i", "NP"), ("would", ","), ("i", "NP"), ("do", "NP")]
    assert pairs("yes — no – maybe - so", NormalizeConfig(dash=".")) == [
        ("yes", "."), ("no", "."), ("maybe", "."), ("so", "NP")]


def test_numbers():
    assert pairs("It costs 1,000 dollars.") == [("it", "NP"), ("costs", "NP"), ("1000", "NP"), ("dollars", ".")]
    assert pairs("We had 1,000, then 2,500,000.") == [
        ("we", "NP"), ("had", "NP"), ("1000", ","), ("then", "NP"), ("2500000", ".")]
    assert pairs("Pi is 3.14, at 10:30 sharp.") == [
        ("pi", "NP"), ("is", "NP"), ("3", "NP"), ("14", ","), ("at", "NP"), ("10", "NP"), ("30", "NP"), ("sharp", ".")]
    assert pairs("In 1990 and 2000s: 3D.") == [("in", "NP"), ("1990", "NP"), ("and", "NP"), ("2000s", ","), ("3d", ".")]
    assert pairs("1, 2, 3.") == [("1", ","), ("2", ","), ("3", ".")]


def test_acronyms_abbreviations_and_dotted_names():
    assert pairs("The U.S. is big.") == [("the", "NP"), ("us", "NP"), ("is", "NP"), ("big", ".")]
    assert pairs("Mr. Darcy and Mrs. Bennet met Dr. Who.") == [
        ("mr", "NP"), ("darcy", "NP"), ("and", "NP"), ("mrs", "NP"), ("bennet", "NP"), ("met", "NP"),
        ("dr", "NP"), ("who", ".")]
    assert pairs("Go to ted.com now.") == [("go", "NP"), ("to", "NP"), ("ted", "NP"), ("com", "NP"), ("now", ".")]
    assert pairs("Mr. Darcy", NormalizeConfig(abbreviations=())) == [("mr", "."), ("darcy", "NP")]


def test_bracketed_events_dropped_or_kept():
    text = "It works. (Laughter) And then, (Applause) it stops."
    assert pairs(text) == [("it", "NP"), ("works", "."), ("and", "NP"), ("then", ","), ("it", "NP"), ("stops", ".")]
    kept = pairs(text, NormalizeConfig(events="keep"))
    assert ("laughter", "NP") in kept and ("applause", "NP") in kept
    assert pairs("(Applause)") == []
    assert pairs("[Music] Hi.") == [("hi", ".")]
    # Ordinary parentheses are marks: the words inside stay.
    assert pairs("the house (which was old) fell.") == [
        ("the", "NP"), ("house", "NP"), ("which", "NP"), ("was", "NP"), ("old", "NP"), ("fell", ".")]


def test_symbols_are_dropped_and_unicode_letters_kept():
    assert pairs("Rock & roll, 50% off_ *now*") == [("rock", "NP"), ("roll", ","), ("50", "NP"), ("off", "NP"), ("now", "NP")]
    assert pairs("Café Über naïve.") == [("café", "NP"), ("über", "NP"), ("naïve", ".")]


def test_spans_point_at_the_words():
    text = 'She said, "Don\'t go -- twenty-one times!" (Laughter) OK?'
    result = normalize(text)
    assert len(result.words) == len(result.labels) == len(result.spans)
    for word, (a, b) in zip(result.words, result.spans):
        assert text[a:b].lower().replace("’", "'") == word


@pytest.mark.parametrize("text", [
    "A quick test, with all sorts -- of marks; really! Isn't it? (Applause) 3.5% of 1,000: \"yes\".",
    "“Curly quotes,” she said… and ‘single’ ones—dashes.",
    "", "   ", "?", "x",
])
def test_invariants(text):
    words, labels = words_and_labels(text)
    assert len(words) == len(labels)
    assert all(label in PUNCT4.classes for label in labels)
    assert all(re.fullmatch(r"[^\W_]+(?:'[^\W_]+)*", w) for w in words), words
    assert all(w == w.lower() for w in words)


def test_table_is_printed_with_every_mark():
    table = format_mark_table(NormalizeConfig(colon="."))
    for mark in mark_table():
        assert mark in table or mark in "…-\"()"
    assert ":            -> ." in table
    assert "(Laughter): drop" in table
