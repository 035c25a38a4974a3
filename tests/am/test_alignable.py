"""punct.am.alignable: letters the AM's token table lacks folded for alignment, one path for stage 3 and punctuate."""

from __future__ import annotations

import string

import numpy as np
import pytest

from punct.am.alignable import align_folded, align_words, fold_char, fold_words, place_unaligned
from punct.am.tokens import BLANK, SPACE, TokenTable
from punct.am.viterbi import AlignmentError, ctc_forced_align, encode_for_alignment, word_spans

ENGLISH = TokenTable([BLANK, SPACE, "'", *string.ascii_lowercase])  # the English AM's 29 tokens
CZECH = TokenTable([BLANK, SPACE, "'", *string.ascii_lowercase, *sorted("áčďéěíňóřšťúůýž")])


def symbols(tokens: TokenTable) -> set[str]:
    return set(tokens.symbols[2:])


def test_english_loanwords_fold_to_english_letters():
    words = ["café", "naïve", "Élizabeth", "straße", "ærø", "it’s", "‘tis", "łódź", "þing", "ﬁne"]
    folded = fold_words(words, symbols(ENGLISH))
    assert folded.said == ["cafe", "naive", "elizabeth", "strasse", "aero", "it's", "'tis", "lodz", "thing", "fine"]
    assert folded.words == words and folded.unaligned == [] and not folded.dropped
    assert folded.folds["é->e"] == 1 and folded.folds["ß->ss"] == 1 and folded.folds["’->'"] == 1
    assert folded.changed == len(words)


def test_czech_words_fold_for_an_english_am_and_stay_for_a_czech_one():
    words = ["příliš", "žluťoučký", "kůň", "úpěl", "ďábelské", "ódy"]
    assert fold_words(words, symbols(ENGLISH)).said == ["prilis", "zlutoucky", "kun", "upel", "dabelske", "ody"]
    czech = fold_words(words, symbols(CZECH))
    assert czech.said == words and czech.changed == 0 and not czech.folds and czech.summary() == ""


def test_only_missing_characters_are_folded():
    assert fold_char("č", symbols(CZECH)) == "č" and fold_char("č", symbols(ENGLISH)) == "c"
    assert fold_char("a", symbols(ENGLISH)) == "a"
    assert fold_char("’", set("ab")) == ""  # no apostrophe in the table: the curly one is left out
    assert fold_char("E", symbols(ENGLISH)) == "e"  # an upper-case letter of a lower-case table
    assert fold_char("ǣ", symbols(ENGLISH)) == "ae"  # decomposes to æ, which the table then spells


def test_unfoldable_characters_are_left_out_and_counted():
    folded = fold_words(["hello", "日本", "x日", "café"], symbols(ENGLISH))
    assert folded.said == ["hello", "", "x", "cafe"]
    assert folded.unaligned == ["日本"] and folded.dropped == {"日": 2, "本": 1}
    summary = folded.summary()
    assert "3 of 4 words" in summary and "é->e x1" in summary and "'日' x2" in summary and "['日本']" in summary


def test_nothing_to_align_fails_with_the_words():
    with pytest.raises(AlignmentError, match=r"unknown character: no word of \['日本', '4'\]") as e:
        fold_words(["日本", "4"], symbols(ENGLISH))
    assert e.value.reason == "unknown character"
    with pytest.raises(AlignmentError, match="empty word"):
        fold_words(["a", ""], symbols(ENGLISH))


def test_placed_words_share_the_gap_or_the_neighbours_edge():
    # between two aligned words with a gap: the gap; without one: the last frame of the word before
    assert place_unaligned([(0, 5), (8, 9)], [0, 2], 3, 20) == [(0, 5), (5, 8), (8, 9)]
    assert place_unaligned([(0, 5), (5, 9)], [0, 3], 4, 20) == [(0, 5), (4, 5), (4, 5), (5, 9)]
    # at the start and at the end of the audio
    assert place_unaligned([(3, 5)], [1], 3, 20) == [(0, 3), (3, 5), (5, 20)]
    assert place_unaligned([(0, 5)], [1], 3, 5) == [(0, 1), (0, 5), (4, 5)]
    # seconds with one frame (0.01 s) as the least length
    assert place_unaligned([(0.0, 0.5), (0.5, 0.9)], [0, 2], 3, 1.0, 0.01) == [(0.0, 0.5), (0.49, 0.5), (0.5, 0.9)]


def peaked_log_probs(tokens: TokenTable, said: str, frames_per_token: int = 3) -> np.ndarray:
    """Log-posteriors whose best path spells ``said`` (words split by spaces), each token then a blank."""
    rows = []
    for ch in said:
        for _ in range(frames_per_token):
            row = np.full(len(tokens), -10.0)
            row[tokens.space_id if ch == " " else tokens.ids[ch]] = 0.0
            rows.append(row)
        blank = np.full(len(tokens), -10.0)
        blank[0] = 0.0
        rows.append(blank)
    return np.stack(rows)


def test_alignment_keeps_the_original_words_and_equals_the_plain_path_when_nothing_folds():
    lp = peaked_log_probs(ENGLISH, "the cafe")
    spans, folded = align_words(lp, ["the", "café"], ENGLISH)
    assert [s.word for s in spans] == ["the", "café"] and folded.folds == {"é->e": 1}
    # the same frames as the word the AM knows, through the plain CTC path
    ids = {s: i for s, i in ENGLISH.ids.items() if s not in (BLANK, SPACE)}
    seq, word_of_token = encode_for_alignment(["the", "cafe"], ids, ENGLISH.space_id)
    plain = word_spans(ctc_forced_align(lp, seq)[0], ["the", "cafe"], word_of_token)
    assert [(s.start, s.end) for s in spans] == [(s.start, s.end) for s in plain]
    # a Czech AM aligns Czech words unchanged
    lp = peaked_log_probs(CZECH, "kůň")
    spans, folded = align_words(lp, ["kůň"], CZECH)
    assert folded.changed == 0 and spans[0].word == "kůň" and spans[0].end > spans[0].start


def test_a_word_with_nothing_to_align_is_placed_between_its_neighbours():
    lp = np.concatenate(
        [peaked_log_probs(ENGLISH, "hello"), np.tile([[0.0] + [-10.0] * 28], (6, 1)), peaked_log_probs(ENGLISH, "cafe")]
    )
    folded = fold_words(["hello", "日本", "café"], symbols(ENGLISH))
    spans = align_folded(lp, folded, ENGLISH)
    assert [s.word for s in spans] == ["hello", "日本", "café"]
    assert spans[0].end <= spans[1].start < spans[1].end <= spans[2].start  # in the silence between the two
    starts = [s.start for s in spans]
    assert starts == sorted(starts) and all(s.end > s.start for s in spans)
