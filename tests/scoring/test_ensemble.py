"""Ensemble: p = alpha p_tdnn + (1 - alpha) p_bert, alpha chosen on dev."""

from __future__ import annotations

import numpy as np
import pytest

from punct.io.shards import write_shard
from punct.labels import PUNCT4
from punct.scoring.ensemble import (
    ALPHA_RULES,
    alpha_sweep,
    choose_alpha,
    choose_alpha_by_rule,
    choose_alpha_one_se,
    choose_alpha_paired,
    default_alphas,
    ensemble,
    paired_posteriors,
    utterance_confusions,
)


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


# One utterance of three words where only a mixture is right everywhere (test_alpha_is_chosen_on_dev):
# BERT alone gets words 0 and 2, the TDNN alone word 1, alpha 0.4-0.6 all three.
MIX_REF = np.array([1, 3, 2])
MIX_BERT = np.array([[0.1, 0.8, 0.05, 0.05], [0.6, 0.1, 0.1, 0.2], [0.05, 0.05, 0.9, 0.0]])
MIX_TDNN = np.array([[0.6, 0.2, 0.1, 0.1], [0.1, 0.1, 0.05, 0.75], [0.3, 0.6, 0.1, 0.0]])


def noisy_model(ref, accuracy, rng, sharp=0.7):
    """Posteriors that are right on ``accuracy`` of the words and a random other class elsewhere."""
    guess = np.where(rng.random(len(ref)) < accuracy, ref, (ref + rng.integers(1, 4, len(ref))) % 4)
    return one_hot(guess, sharp=sharp)


def stacked(utterances):
    ref, pt, pb = (np.concatenate([u[i] for u in utterances]) for i in range(3))
    return ref, pt, pb, [len(u[0]) for u in utterances]


def test_utterance_confusions_split_the_stack():
    ref, hyp = np.array([1, 0, 2, 3, 3]), np.array([1, 1, 2, 0, 3])
    conf = utterance_confusions(ref, hyp, [2, 3], 4)
    assert conf.shape == (2, 4, 4) and conf[0, 0, 1] == 1 and conf[0, 1, 1] == 1 and conf[1, 3, 0] == 1
    assert conf.sum() == 5
    with pytest.raises(ValueError, match="do not split"):
        utterance_confusions(ref, hyp, [2, 2], 4)


def test_one_se_rule_keeps_a_mixture_that_clearly_wins():
    ref, pt, pb, lengths = stacked([(MIX_REF, MIX_TDNN, MIX_BERT)] * 100)
    choice = choose_alpha_one_se(ref, pt, pb, lengths, default_alphas(), num_resamples=200)
    assert choice.rule == "one-se" and choice.alpha == choice.best_alpha == 0.4 and choice.best_score == 1.0
    assert choice.standard_error == 0.0  # every resample holds the same utterance
    with pytest.raises(ValueError, match="at least 2 resamples"):
        choose_alpha_one_se(ref, pt, pb, lengths, default_alphas(), num_resamples=1)


def test_one_se_rule_prefers_the_better_single_model_within_noise():
    rng = np.random.default_rng(0)
    utterances = []
    for _ in range(150):  # TDNN right on 80 % of the words, BERT on 50 %, both mistakes random
        ref = rng.choice(4, size=8, p=[0.6, 0.2, 0.15, 0.05])
        utterances.append((ref, noisy_model(ref, 0.8, rng, sharp=0.9), noisy_model(ref, 0.5, rng, sharp=0.4)))
    utterances += [(MIX_REF, MIX_TDNN, MIX_BERT)] * 3  # a few words only a mixture gets right
    ref, pt, pb, lengths = stacked(utterances)
    alphas = default_alphas()
    f1 = {p.alpha: p.scores.overall["f1"] for p in alpha_sweep(ref, pt, pb, PUNCT4.classes, alphas)}
    choice = choose_alpha_one_se(ref, pt, pb, lengths, alphas)
    assert choice.best_alpha == choose_alpha(alpha_sweep(ref, pt, pb, PUNCT4.classes, alphas)) < 1.0
    assert choice.best_score == pytest.approx(max(f1.values()))
    assert 0 < f1[choice.best_alpha] - f1[1.0] < choice.standard_error < 0.05
    assert choice.alpha == 1.0 and "the TDNN alone" in choice.describe()
    # the same data with the models' roles swapped: BERT alone (alpha 0)
    swapped = choose_alpha_one_se(ref, pb, pt, lengths, alphas)
    assert swapped.alpha == 0.0 and swapped.best_alpha > 0.0 and "BERT alone" in swapped.describe()
    # with more such words the mixture's gain exceeds the noise and the mixture is kept
    ref, pt, pb, lengths = stacked(utterances + [(MIX_REF, MIX_TDNN, MIX_BERT)] * 60)
    assert choose_alpha_one_se(ref, pt, pb, lengths, alphas).alpha not in (0.0, 1.0)


def test_paired_rule_keeps_a_mixture_that_wins_on_the_same_utterances():
    """The mixture fixes a few words and otherwise agrees with the TDNN: its gain (~0.9 points) is below the
    marginal standard error of its score (~1.8, the spread of the utterances' difficulty, which both systems
    share) but above that of the paired difference (~0.5), so the one-SE rule drops it and the paired rule
    keeps it; without those words the two are equal on every resample and the TDNN alone is kept."""
    rng = np.random.default_rng(0)
    utterances = []
    for _ in range(150):  # as in the test above
        ref = rng.choice(4, size=8, p=[0.6, 0.2, 0.15, 0.05])
        utterances.append((ref, noisy_model(ref, 0.8, rng, sharp=0.9), noisy_model(ref, 0.5, rng, sharp=0.4)))
    alphas = default_alphas()
    ref, pt, pb, lengths = stacked(utterances + [(MIX_REF, MIX_TDNN, MIX_BERT)] * 3)
    marginal = choose_alpha_one_se(ref, pt, pb, lengths, alphas)
    paired = choose_alpha_paired(ref, pt, pb, lengths, alphas)
    assert marginal.alpha == 1.0 and marginal.best_alpha == paired.best_alpha == paired.alpha == 0.4
    gain = paired.best_score - paired.single_score
    assert paired.single_alpha == 1.0 and paired.standard_error < gain < marginal.standard_error
    assert "dev argmax alpha 0.4" in paired.describe() and ": kept" in paired.describe()
    ref, pt, pb, lengths = stacked(utterances)
    tied = choose_alpha_paired(ref, pt, pb, lengths, alphas)
    assert tied.best_alpha < 1.0 and tied.best_score == tied.single_score and tied.standard_error == 0.0
    assert tied.alpha == 1.0 and "the TDNN alone" in tied.describe()


def test_rules_by_name():
    """choose_alpha_by_rule: the three rules by their --alpha-rule names, on one dev argmax."""
    rng = np.random.default_rng(0)
    utterances = []
    for _ in range(150):
        ref = rng.choice(4, size=8, p=[0.6, 0.2, 0.15, 0.05])
        utterances.append((ref, noisy_model(ref, 0.8, rng, sharp=0.9), noisy_model(ref, 0.5, rng, sharp=0.4)))
    ref, pt, pb, lengths = stacked(utterances + [(MIX_REF, MIX_TDNN, MIX_BERT)] * 3)
    alphas = default_alphas()
    choices = {rule: choose_alpha_by_rule(rule, ref, pt, pb, lengths, alphas) for rule in ALPHA_RULES}
    assert choices["paired-se"] == choose_alpha_paired(ref, pt, pb, lengths, alphas)
    assert choices["one-se"] == choose_alpha_one_se(ref, pt, pb, lengths, alphas)
    argmax = choices["argmax"]
    assert argmax.rule == "argmax" and argmax.num_resamples == 0 and argmax.describe() == "highest overall F1"
    assert argmax.alpha == argmax.best_alpha == choose_alpha(alpha_sweep(ref, pt, pb, PUNCT4.classes, alphas)) == 0.4
    assert {c.best_alpha for c in choices.values()} == {0.4} and [c.alpha for c in choices.values()] == [0.4, 1.0, 0.4]
    assert "resamples of the segments" in choices["paired-se"].describe("the text model", "segments")
    with pytest.raises(ValueError, match="unknown alpha rule 'best'"):
        choose_alpha_by_rule("best", ref, pt, pb, lengths, alphas)


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
