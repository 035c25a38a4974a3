"""punct.am.align (stage 3): words folded to the AM's letters as punctuate folds them, original words written."""

from __future__ import annotations

import logging

import numpy as np
from lhotse import MonoCut, SupervisionSegment

import punct.am.align as stage3
import punct.inference.chain as chain
import punct.inference.words as words
from punct.am.alignable import align_words
from tests.am.test_alignable import ENGLISH, peaked_log_probs


def word_cut(cut_id: str, words: list[str], start: float = 1.0) -> MonoCut:
    sup = SupervisionSegment(cut_id, "rec", start, 2.0, custom={"words": words})
    return MonoCut(cut_id, start, 2.0, 0, supervisions=[sup])


def fake_am(monkeypatch, log_probs: dict[str, np.ndarray]) -> None:
    """Stage 3's AM pass replaced by fixed log-posteriors per cut (the cut id travels as its 'features')."""
    monkeypatch.setattr(stage3, "load_cut_features", lambda cut, cmvn: cut.id)
    monkeypatch.setattr(stage3, "run_model", lambda model, feats: log_probs[feats])


def test_stage3_and_punctuate_fold_through_one_function():
    assert stage3.fold_words is words.fold_words and stage3.align_folded is chain.align_folded


def test_stage3_aligns_folded_letters_and_writes_the_original_words(monkeypatch, tmp_path, caplog):
    silence = np.tile([[0.0] + [-10.0] * (len(ENGLISH) - 1)], (5, 1))
    lp = {
        "loan": np.concatenate([peaked_log_probs(ENGLISH, "the cafe"), silence, peaked_log_probs(ENGLISH, "strasse")]),
        "plain": peaked_log_probs(ENGLISH, "the cat"),
        "none": peaked_log_probs(ENGLISH, "a"),
    }
    fake_am(monkeypatch, lp)
    cuts = [
        word_cut("loan", ["the", "café", "日本", "straße"]),
        word_cut("plain", ["the", "cat"]),
        word_cut("none", ["日本"]),
    ]
    with caplog.at_level(logging.WARNING):
        counts = stage3.align_job(None, cuts, None, ENGLISH, tmp_path, "test", 1)
    assert counts == {"aligned": 2, "unknown character": 1}
    loan, _ = stage3.align_cut(None, cuts[0], None, ENGLISH)
    items = loan.supervisions[0].alignment["word"]
    assert [i.symbol for i in items] == ["the", "café", "日本", "straße"]
    starts = [i.start for i in items]
    assert starts == sorted(starts) and all(i.duration > 0 for i in items)
    # the frames punctuate's alignment gives the same words (one path)
    spans, _ = align_words(lp["loan"], ["the", "café", "日本", "straße"], ENGLISH)
    assert [round(1.0 + s.start * 0.01, 8) for s in spans] == starts
    ctm = (tmp_path / "test" / "ctm.1").read_text().split()
    assert "café" in ctm and "日本" in ctm and "straße" in ctm
    failed = (tmp_path / "test" / "failed.1").read_text()
    assert failed.startswith("none unknown character: no word of ['日本']")
    lines = [r.getMessage() for r in caplog.records if "punct.am.alignable" in r.getMessage()]
    assert len(lines) == 1 and "'fold é->e': 1" in lines[0] and "'words placed, not aligned': 1" in lines[0], lines
    # a cut whose words the AM has aligns as before, with nothing folded
    plain, plain_spans = stage3.align_cut(None, cuts[1], None, ENGLISH)
    assert [s.word for s in plain_spans] == ["the", "cat"]
