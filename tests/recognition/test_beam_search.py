"""The word n-gram LM (estimation, ARPA) and the CTC prefix beam search of stage-2 recognition."""

import math

import numpy as np
import pytest

from punct.bin import build_word_lm
from punct.recognition.beam_search import BeamSearchConfig, CtcBeamSearch
from punct.recognition.recognise import greedy_words
from punct.recognition.word_lm import EOS, UNK, WordNgramLm, estimate_word_lm, read_word_lm

VOCAB = ["<blk>", "|"] + list("abcdehijklmnoprstuvyzáéíýčřšž")
TEXTS = [
    ["dobrý", "den", "vážení", "poslanci"],
    ["vážení", "poslanci", "zákon", "je", "schválen"],
    ["návrh", "zákona", "je", "schválen", "dobrý", "den"],
    ["rozpočet", "je", "schválen", "a", "výbor", "souhlasí"],
]


@pytest.mark.parametrize("order", [1, 2, 3])
@pytest.mark.parametrize("history", [(), ("je",), ("zákon", "je"), ("vážení", "poslanci"), ("nikdy", "neviděno")])
def test_lm_distributions_sum_to_one(order, history):
    lm = estimate_word_lm(TEXTS, order)
    total = sum(math.exp(lm.log_prob(history, w)) for w in sorted(lm.vocab) + [EOS, UNK])
    assert total == pytest.approx(1.0, abs=1e-6)
    assert lm.log_prob(history, "neznámé") == lm.log_prob(history, UNK)


def test_lm_prefers_seen_continuations_and_round_trips_through_arpa(tmp_path):
    lm = estimate_word_lm(TEXTS, 3)
    assert lm.log_prob(("zákon", "je"), "schválen") > lm.log_prob(("zákon", "je"), "den") + 2
    assert lm.is_prefix("schv") and lm.is_prefix("schválen") and not lm.is_prefix("schx")
    path = tmp_path / "lm.arpa"
    lm.write_arpa(path)
    back = read_word_lm(path)
    assert back.order == 3 and back.vocab == lm.vocab
    for history in [(), ("je",), ("zákon", "je"), ("x", "y")]:
        for w in ["schválen", "den", "poslanci", EOS, "zzz"]:
            assert back.log_prob(history, w) == pytest.approx(lm.log_prob(history, w), abs=1e-5)


def test_arpa_errors_name_the_line(tmp_path):
    path = tmp_path / "bad.arpa"
    path.write_text("\\data\\\nngram 1=2\n\n\\1-grams:\n-1.0\t<unk>\n-0.5\n\\end\\\n")
    with pytest.raises(ValueError, match=r"bad.arpa:6: not an ARPA 1-gram line"):
        WordNgramLm.read_arpa(path)
    path.write_text("\\data\\\nngram 1=1\n\n\\1-grams:\n-1.0\tslovo\n\\end\\\n")
    with pytest.raises(ValueError, match="no <unk>"):
        WordNgramLm.read_arpa(path)


def posteriors(frames):
    """(T, V) log-posteriors: each frame a dict symbol -> probability, the rest spread evenly."""
    out = np.full((len(frames), len(VOCAB)), 1e-4)
    for t, frame in enumerate(frames):
        for sym, p in frame.items():
            out[t, VOCAB.index(sym)] = p
    return np.log(out / out.sum(1, keepdims=True))


def spell(text, space_prob=0.9):
    """Frames spelling ``text``: a character frame and a blank frame per letter, a space frame per ' '."""
    frames = []
    for ch in text:
        if ch == " ":
            frames += [{"|": space_prob, "<blk>": 1 - space_prob}, {"<blk>": 0.95}]
        else:
            frames += [{ch: 0.8, "<blk>": 0.15}, {"<blk>": 0.95}]
    return frames


def test_beam_search_without_lm_agrees_with_greedy_on_clear_posteriors():
    lp = posteriors(spell("dobrý den vážení poslanci"))
    assert greedy_words(lp, VOCAB) == CtcBeamSearch(VOCAB, None).decode(lp) == ["dobrý", "den", "vážení", "poslanci"]


def test_lm_joins_a_word_split_by_a_spurious_space():
    # the AM hears a pause inside "poslanci" (space 0.6 against blank 0.4): greedy splits it
    lp = posteriors(spell("vážení pos") + [{"|": 0.6, "<blk>": 0.4}] + spell("lanci"))
    assert greedy_words(lp, VOCAB) == ["vážení", "pos", "lanci"]
    lm = estimate_word_lm(TEXTS, 3)
    assert CtcBeamSearch(VOCAB, lm, BeamSearchConfig(beam=8)).decode(lp) == ["vážení", "poslanci"]


def test_words_outside_the_vocabulary_pay_per_character():
    # no clear spaces at all: one long made-up word against four words of the LM; a penalty once per
    # word would let the made-up word win, one per character does not
    lp = posteriors(spell("je schválen dobrý den", space_prob=0.3))
    lm = estimate_word_lm(TEXTS, 3)
    assert greedy_words(lp, VOCAB) == ["jeschválendobrýden"]
    assert CtcBeamSearch(VOCAB, lm, BeamSearchConfig(beam=8)).decode(lp) == ["je", "schválen", "dobrý", "den"]


def test_repeated_letters_need_a_blank_between_them():
    lm = estimate_word_lm([["na", "nn"], ["a"]], 2)
    frames = [{"n": 0.9}, {"n": 0.9}, {"a": 0.9}]  # "n n a" without a blank is one n
    assert CtcBeamSearch(VOCAB, lm).decode(posteriors(frames)) == ["na"]
    frames = [{"n": 0.9}, {"<blk>": 0.9}, {"n": 0.9}]
    assert CtcBeamSearch(VOCAB, lm).decode(posteriors(frames)) == ["nn"]
    one_hot = np.full((3, len(VOCAB)), -np.inf)  # a certain blank (log-prob exactly 0) separates them too
    one_hot[[0, 1, 2], [VOCAB.index("n"), 0, VOCAB.index("n")]] = 0.0
    assert CtcBeamSearch(VOCAB, lm).decode(one_hot) == ["nn"]


def test_build_word_lm_keeps_an_unchanged_file(tmp_path):
    from lhotse import SupervisionSegment, SupervisionSet

    sups = [
        SupervisionSegment(
            id=f"s{i}",
            recording_id="r",
            start=0,
            duration=1,
            custom={"words": [w.capitalize() + "," for w in words], "punct": [""] * len(words)},
        )
        for i, words in enumerate(TEXTS)
    ]
    manifest = tmp_path / "sups.jsonl.gz"
    SupervisionSet.from_segments(sups).to_file(manifest)
    out = tmp_path / "lm" / "words.arpa"
    assert build_word_lm.main([str(manifest), str(out), "--order", "2"]) == 0
    lm = read_word_lm(out)
    assert "schválen" in lm.vocab and "Schválen," not in lm.vocab  # the form recognised words are compared in
    mtime = out.stat().st_mtime_ns
    build_word_lm.main([str(manifest), str(out), "--order", "2"])
    assert out.stat().st_mtime_ns == mtime
    build_word_lm.main([str(manifest), str(out), "--order", "3"])
    assert out.stat().st_mtime_ns != mtime and read_word_lm(out).order == 3
