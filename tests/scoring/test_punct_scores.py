"""Punctuation metrics against hand-counted examples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from punct.labels import PUNCT4
from punct.scoring.punct_scores import Coverage, Dropped, confusion_matrix, coverage, score, write_scores

# ref:  NP  ,  .  NP  ?  ,  .  NP  .  NP
# hyp:  NP  ,  ,  .   ?  NP .  NP  .  ?
REF = [0, 1, 2, 0, 3, 1, 2, 0, 2, 0]
HYP = [0, 1, 1, 2, 3, 0, 2, 0, 2, 3]


def test_confusion_matrix():
    cm = confusion_matrix(REF, HYP, 4)
    expected = np.array(
        [
            [2, 0, 1, 1],  # NP: 2 right, 1 -> ".", 1 -> "?"
            [1, 1, 0, 0],  # ",": 1 missed, 1 right
            [0, 1, 2, 0],  # ".": 1 -> ",", 2 right
            [0, 0, 0, 1],  # "?": right
        ]
    )
    assert (cm == expected).all()


def test_hand_counted_scores():
    s = score(REF, HYP, PUNCT4.classes)
    # ",": TP 1, predicted 2, reference 2
    assert s.per_class[","]["precision"] == pytest.approx(1 / 2)
    assert s.per_class[","]["recall"] == pytest.approx(1 / 2)
    # ".": TP 2, predicted 3, reference 3
    assert s.per_class["."]["precision"] == pytest.approx(2 / 3)
    assert s.per_class["."]["recall"] == pytest.approx(2 / 3)
    # "?": TP 1, predicted 2, reference 1
    assert s.per_class["?"]["precision"] == pytest.approx(1 / 2)
    assert s.per_class["?"]["recall"] == pytest.approx(1.0)
    assert s.per_class["?"]["f1"] == pytest.approx(2 / 3)
    # overall: TP 4; predicted marks 7; reference marks 6
    assert s.overall["precision"] == pytest.approx(4 / 7)
    assert s.overall["recall"] == pytest.approx(4 / 6)
    assert s.overall["f1"] == pytest.approx(2 * (4 / 7) * (4 / 6) / (4 / 7 + 4 / 6))
    assert s.overall["support"] == 6
    assert s.macro_f1 == pytest.approx((1 / 2 + 2 / 3 + 2 / 3) / 3)


def test_generic_classes_and_empty_class():
    classes = ["blank", "a", "b", "c", "d"]
    s = score([0, 1, 2, 0], [0, 1, 0, 2], classes)
    assert s.per_class["a"]["f1"] == 1.0
    assert s.per_class["b"]["f1"] == 0.0
    assert s.per_class["c"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}
    assert s.macro_f1 == pytest.approx(1 / 4)
    assert s.overall["precision"] == pytest.approx(1 / 2) and s.overall["recall"] == pytest.approx(1 / 2)


def test_bad_input():
    with pytest.raises(ValueError):
        score([0, 1], [0], PUNCT4.classes)
    with pytest.raises(ValueError):
        score([0, 4], [0, 1], PUNCT4.classes)


def test_write_scores(tmp_path):
    s = score(REF, HYP, PUNCT4.classes)
    write_scores(s, tmp_path / "results-dev", "dev")
    data = json.loads((tmp_path / "results-dev.json").read_text())
    assert data["overall"]["f1"] == pytest.approx(s.overall["f1"])
    assert data["confusion"][0] == [2, 0, 1, 1]
    md = (tmp_path / "results-dev.md").read_text()
    assert "| , | 50.0 | 50.0 | 50.0 | 2 |" in md
    assert "| ? | 50.0 | 100.0 | 66.7 | 1 |" in md


def test_coverage_counts_what_was_dropped_and_why():
    manifest = {"a": 3, "b": 5, "c": 2, "d": 4}  # utterance -> words
    scored = {"a": 3, "d": 4}
    cov = coverage(
        "sups.jsonl.gz",
        manifest,
        scored,
        {"b": "not aligned"},
        {"b": "unknown character"},
        default_reason="no posteriors",
    )
    assert (cov.utterances, cov.words, cov.manifest_utterances, cov.manifest_words) == (2, 7, 4, 14)
    assert cov.dropped == {"not aligned": Dropped(1, 5), "no posteriors": Dropped(1, 2)}
    assert cov.dropped_ids == {"b": "not aligned: unknown character", "c": "no posteriors"}
    assert cov.summary() == (
        "2 of 4 utterances (7 of 14 words) scored; dropped: 1 not aligned (5 words), 1 no posteriors (2 words)"
    )
    assert Coverage.from_dict(json.loads(json.dumps(cov.to_dict()))) == cov
    everything = coverage("sups", manifest, manifest)
    assert everything.summary().endswith("dropped: none") and everything.dropped_ids == {}
    # a scored word count that differs from the manifest's is said, not hidden
    assert coverage("sups", manifest, {"a": 2}).words_differ == 1


def test_coverage_names_what_stage_0_left_out_of_the_manifest():
    cov = coverage("sups", {"a": 2}, {"a": 2})
    assert "stage 0" not in cov.summary()
    cov.not_in_manifest = {"unspeakable_token": 2, "no_words": 0}
    assert cov.summary().endswith("; left out of the manifest at stage 0: 2 unspeakable token")
    assert Coverage.from_dict(json.loads(json.dumps(cov.to_dict()))) == cov
    old = cov.to_dict()
    del old["not_in_manifest"]  # results.json written before the field: still read
    assert Coverage.from_dict(old).not_in_manifest == {}


def test_coverage_refuses_ids_the_manifest_lacks():
    with pytest.raises(ValueError, match="not in sups"):
        coverage("sups", {"a": 1}, {"a": 1, "z": 2})


def test_write_scores_says_what_was_scored(tmp_path):
    s = score(REF, HYP, PUNCT4.classes)
    cov = coverage("sups.jsonl.gz", {"u1": 6, "u2": 4, "u3": 5}, {"u1": 6, "u2": 4}, default_reason="no posteriors")
    write_scores(s, tmp_path / "results-test", "test", cov)
    data = json.loads((tmp_path / "results-test.json").read_text())
    assert data["coverage"]["utterances"] == 2 and data["coverage"]["dropped"]["no posteriors"] == {
        "utterances": 1,
        "words": 5,
    }
    md = (tmp_path / "results-test.md").read_text()
    assert md.startswith(
        "### test\n\nCoverage (sups.jsonl.gz): 2 of 3 utterances (10 of 15 words) scored; "
        "dropped: 1 no posteriors (5 words)"
    )
    assert "| macro F1 | | | 61.1 | |" in md  # (1/2 + 2/3 + 2/3) / 3
