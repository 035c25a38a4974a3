"""The pause-only classifier: it learns a label told by the silence after a word, and only then; posteriors over
every class; the dev choice; save and load."""

from __future__ import annotations

import numpy as np
import pytest

from punct.labels import PUNCT4
from punct.models.pause.model import (
    PauseCandidate,
    PauseClassifier,
    PauseConfig,
    candidates,
    choose_on_dev,
    classifier_threads,
    fit,
)
from punct.scoring.punct_scores import score

CLASSES = PUNCT4.classes
SMALL = PauseConfig(logistic_c=(0.01, 1.0), tree_depths=(2,), tree_iterations=30)
# the silence after a word (seconds) by label: no mark, comma, full stop, question
PAUSE_AFTER = {0: (0.0, 0.05), 1: (0.15, 0.25), 2: (0.35, 0.5), 3: (0.6, 0.8)}


def words(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` words whose label decides the silence after them; the other features are noise."""
    rng = np.random.default_rng(seed)
    labels = rng.choice(4, size=n, p=[0.7, 0.15, 0.1, 0.05])
    low, high = np.array([PAUSE_AFTER[y] for y in labels]).T
    features = np.stack(
        [rng.uniform(low, high), rng.uniform(0, 0.5, n), rng.uniform(0.1, 0.6, n), rng.random(n) < 0.1], axis=1
    )
    return features.astype(np.float64), labels


def test_learns_the_label_that_the_silence_tells():
    train, dev, test = words(1500, 0), words(600, 1), words(600, 2)
    with classifier_threads(1):
        model, choice = choose_on_dev(train, dev, CLASSES, SMALL, seed=3)
        f1 = score(test[1], model.predict(test[0]), CLASSES).overall["f1"]
    assert choice.best.overall_f1 > 0.95 and f1 > 0.95


def test_shuffled_labels_teach_nothing():
    """The control: the same features with the train and dev labels shuffled (so no feature tells them)."""
    rng = np.random.default_rng(7)
    (xt, yt), (xd, yd), (xs, ys) = words(1500, 0), words(600, 1), words(600, 2)
    with classifier_threads(1):
        model, _ = choose_on_dev((xt, rng.permutation(yt)), (xd, rng.permutation(yd)), CLASSES, SMALL, seed=3)
        f1 = score(ys, model.predict(xs), CLASSES).overall["f1"]
    assert f1 < 0.45


def test_the_dev_choice_is_the_first_best_of_the_grid():
    train, dev = words(400, 0), words(200, 1)
    with classifier_threads(1):
        model, choice = choose_on_dev(train, dev, CLASSES, SMALL, seed=0)
    grid = candidates(SMALL)
    assert [p.candidate for p in choice.grid] == grid and len(grid) == 2 * (2 + 1)
    scores = [p.overall_f1 for p in choice.grid]
    assert choice.chosen == scores.index(max(scores)) and model.candidate == grid[choice.chosen]
    record = choice.to_dict()
    assert record["chosen"]["name"] == model.candidate.describe() and len(record["grid"]) == len(grid)


def test_the_grid_follows_the_config():
    config = PauseConfig(kinds=("trees",), tree_depths=(2, 4), class_weights=("balanced",))
    assert candidates(config) == [
        PauseCandidate("trees", "balanced", max_depth=2),
        PauseCandidate("trees", "balanced", max_depth=4),
    ]
    with pytest.raises(ValueError, match="kinds"):
        PauseConfig(kinds=("forest",))
    with pytest.raises(ValueError, match="class_weights"):
        PauseConfig(class_weights=())


def test_a_class_missing_from_train_gets_probability_zero():
    x, y = words(500, 0)
    keep = y != 3
    with classifier_threads(1):
        model = fit(PauseCandidate("trees", "none", max_depth=2), SMALL, x[keep], y[keep], CLASSES, seed=0)
        post = model.posteriors(x[:50])
    assert post.shape == (50, 4) and post.dtype == np.float32
    assert np.all(post[:, 3] == 0) and np.allclose(post.sum(axis=1), 1, atol=1e-5)
    assert model.posteriors(np.zeros((0, 4))).shape == (0, 4)


def test_one_class_is_nothing_to_learn():
    x, _ = words(20, 0)
    with pytest.raises(ValueError, match="1 class"):
        fit(PauseCandidate("logistic", "none", c=1.0), SMALL, x, np.zeros(20, dtype=int), CLASSES, seed=0)


@pytest.mark.parametrize("candidate", candidates(SMALL)[1::3])
def test_seeded_saved_and_loaded(tmp_path, candidate):
    x, y = words(400, 0)
    with classifier_threads(1):
        first = fit(candidate, SMALL, x, y, CLASSES, seed=5)
        again = fit(candidate, SMALL, x, y, CLASSES, seed=5)
        first.save(tmp_path / "model.pkl")
        loaded = PauseClassifier.load(tmp_path / "model.pkl")
        np.testing.assert_array_equal(first.posteriors(x), again.posteriors(x))
        np.testing.assert_array_equal(loaded.posteriors(x), first.posteriors(x))
    assert loaded.candidate == candidate and loaded.classes == CLASSES
