"""Punctuation metrics against hand-counted examples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from punct.metrics import confusion_matrix, score, write_scores
from punct.text.labels import MUSTC_CLASSES


# ref:  NP  ,  .  NP  ?  ,  .  NP  .  NP
# hyp:  NP  ,  ,  .   ?  NP .  NP  .  ?
REF = [0, 1, 2, 0, 3, 1, 2, 0, 2, 0]
HYP = [0, 1, 1, 2, 3, 0, 2, 0, 2, 3]


def test_confusion_matrix():
    cm = confusion_matrix(REF, HYP, 4)
    expected = np.array([
        [2, 0, 1, 1],  # NP: 2 right, 1 -> ".", 1 -> "?"
        [1, 1, 0, 0],  # ",": 1 missed, 1 right
        [0, 1, 2, 0],  # ".": 1 -> ",", 2 right
        [0, 0, 0, 1],  # "?": right
    ])
    assert (cm == expected).all()


def test_hand_counted_scores():
    s = score(REF, HYP, MUSTC_CLASSES)
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
        score([0, 1], [0], MUSTC_CLASSES)
    with pytest.raises(ValueError):
        score([0, 4], [0, 1], MUSTC_CLASSES)


def test_write_scores(tmp_path):
    s = score(REF, HYP, MUSTC_CLASSES)
    write_scores(s, tmp_path / "results-dev", "dev")
    data = json.loads((tmp_path / "results-dev.json").read_text())
    assert data["overall"]["f1"] == pytest.approx(s.overall["f1"])
    assert data["confusion"][0] == [2, 0, 1, 1]
    md = (tmp_path / "results-dev.md").read_text()
    assert "| , | 50.0 | 50.0 | 50.0 | 2 |" in md
    assert "| ? | 50.0 | 100.0 | 66.7 | 1 |" in md
