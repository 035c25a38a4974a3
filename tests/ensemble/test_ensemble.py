"""Ensemble: p = alpha p_tdnn + (1 - alpha) p_bert, alpha chosen on dev."""

from __future__ import annotations

import numpy as np
import pytest

from punct.ensemble import alpha_sweep, choose_alpha, default_alphas, ensemble, paired_posteriors
from punct.io.shards import write_shard
from punct.labels import PUNCT4


def one_hot(labels, n=4, sharp=0.7):
    p = np.full((len(labels), n), (1 - sharp) / (n - 1))
    p[np.arange(len(labels)), labels] = sharp
    return p


def test_alpha_grid():
    assert default_alphas() == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]


def test_ensemble_endpoints_and_checks():
    a, b = one_hot([1, 2]), one_hot([0, 3])
    assert np.allclose(ensemble(a, b, 1.0), a) and np.allclose(ensemble(a, b, 0.0), b)
    assert np.allclose(ensemble(a, b, 0.4), 0.4 * a + 0.6 * b)
    with pytest.raises(ValueError, match="shapes"):
        ensemble(a, b[:1], 0.5)
    with pytest.raises(ValueError, match="alpha"):
        ensemble(a, b, 1.5)


def test_alpha_is_chosen_on_dev():
    # word 0 (ref ,): BERT sure and right, TDNN wrong   -> right while alpha < 0.64
    # word 1 (ref ?): BERT wrong, TDNN sure and right   -> right while alpha > 0.38
    # word 2 (ref NP): BERT sure and right, TDNN wrong  -> right while alpha < 0.74
    ref = np.array([1, 3, 0])
    bert = np.array([[0.1, 0.8, 0.05, 0.05], [0.6, 0.1, 0.1, 0.2], [0.9, 0.05, 0.05, 0.0]])
    tdnn = np.array([[0.6, 0.2, 0.1, 0.1], [0.1, 0.1, 0.05, 0.75], [0.3, 0.6, 0.1, 0.0]])
    sweep = alpha_sweep(ref, tdnn, bert, PUNCT4.classes, default_alphas())
    f1 = {round(p.alpha, 1): p.scores.overall["f1"] for p in sweep}
    assert [a for a, v in f1.items() if v == 1.0] == [0.4, 0.5, 0.6]
    assert f1[0.3] < 1.0 and f1[0.7] < 1.0
    assert choose_alpha(sweep) == 0.4  # best overall F1; ties go to the smallest alpha
    # the choice follows the split it is made on: where the TDNN is right everywhere, alpha = 1 wins alone
    tdnn_right = np.array([[0.1, 0.7, 0.1, 0.1], [0.1, 0.1, 0.05, 0.75], [0.7, 0.1, 0.1, 0.1]])
    bert_wrong = np.array([[0.5, 0.4, 0.05, 0.05], [0.6, 0.1, 0.1, 0.2], [0.1, 0.8, 0.05, 0.05]])
    sweep = alpha_sweep(ref, tdnn_right, bert_wrong, PUNCT4.classes, default_alphas())
    assert choose_alpha(sweep) == min(p.alpha for p in sweep if p.scores.overall["f1"] == 1.0) > 0.5


def test_paired_posteriors_align_by_key(tmp_path):
    refs = {"u1": np.array([0, 1]), "u2": np.array([2]), "u3": np.array([3, 0, 0])}
    write_shard(tmp_path / "tdnn", [("u2", one_hot([2])), ("u1", one_hot([0, 1]))])  # other order, u3 missing
    write_shard(tmp_path / "bert", [("u1", one_hot([1, 1])), ("u2", one_hot([2])), ("u3", one_hot([3, 0, 0]))])
    ref, pt, pb, skipped = paired_posteriors(tmp_path / "tdnn.scp", tmp_path / "bert.scp", refs)
    assert ref.tolist() == [0, 1, 2] and skipped == ["u3"]
    assert pt.argmax(1).tolist() == [0, 1, 2] and pb.argmax(1).tolist() == [1, 1, 2]
    write_shard(tmp_path / "bad", [("u1", one_hot([0])), ("u2", one_hot([2]))])
    with pytest.raises(ValueError, match="u1: 2 words"):
        paired_posteriors(tmp_path / "bad.scp", tmp_path / "bert.scp", refs)
