"""Leave-one-talk-out check of the ensemble-weight rules (punct.scoring.alpha_check), on posteriors whose best
weight is known."""

from __future__ import annotations

import numpy as np
import pytest

from punct.labels import PUNCT4
from punct.scoring.alpha_check import leave_one_talk_out, talk_of
from punct.scoring.ensemble import default_alphas


def posteriors(ref: np.ndarray, right: float, rng: np.random.Generator) -> np.ndarray:
    """Posteriors whose argmax is the reference label with probability ``right``, else a random other class."""
    wrong = (ref + rng.integers(1, 4, len(ref))) % 4
    label = np.where(rng.random(len(ref)) < right, ref, wrong)
    p = np.full((len(ref), 4), 0.1)
    p[np.arange(len(ref)), label] = 0.7
    return p


def test_talk_of_an_utterance_id():
    assert talk_of("ted_2001_13") == "ted_2001" and talk_of("ted_2001") == "ted" and talk_of("abc") == "abc"


def test_rules_follow_the_better_model_on_held_out_talks():
    rng = np.random.default_rng(0)
    ids = [f"ted_{t}_{u}" for t in range(4) for u in range(10)]
    lengths = [20] * len(ids)
    ref = rng.choice(4, size=sum(lengths), p=[0.7, 0.1, 0.1, 0.1])
    p_tdnn, p_bert = posteriors(ref, 0.95, rng), posteriors(ref, 0.4, rng)
    check = leave_one_talk_out(
        ref,
        p_tdnn,
        p_bert,
        ids,
        lengths,
        PUNCT4.classes,
        ["paired-se", "argmax"],
        default_alphas(0.1),
        num_resamples=50,
    )
    assert check.talks == ["ted_0", "ted_1", "ted_2", "ted_3"]
    assert all(len(alphas) == 4 and min(alphas) >= 0.5 for alphas in check.chosen.values())
    assert check.f1["rule argmax"] >= check.f1["alpha 0.4"] and check.f1["alpha 1.0"] > check.f1["alpha 0.0"] + 0.3
    assert check.f1["rule paired-se"] == pytest.approx(check.f1["alpha 1.0"], abs=0.02)


def test_one_talk_is_not_enough():
    with pytest.raises(ValueError, match="two talks"):
        leave_one_talk_out(
            np.zeros(2, int),
            np.ones((2, 4)),
            np.ones((2, 4)),
            ["a_1", "a_2"],
            [1, 1],
            PUNCT4.classes,
            ["argmax"],
            [0.0],
        )
