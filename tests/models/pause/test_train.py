"""train_pause writes the model and the dev choice; is_trained says when they are still those of the inputs."""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from punct.labels import PUNCT4, WordLabels
from punct.models.pause.features import WordPauses
from punct.models.pause.model import PauseClassifier, PauseConfig, classifier_threads
from punct.models.pause.train import CHOICE_FILE, MODEL_FILE, PauseRequest, is_trained, train_pause
from punct.utils.atomic import mark_done
from tests.models.pause.test_model import words

CONFIG = PauseConfig(logistic_c=(1.0,), tree_depths=(2,), tree_iterations=20)


def split(n: int, seed: int) -> WordPauses:
    """``n`` words of the synthetic pauses in utterances of 10 words."""
    features, labels = words(n, seed)
    utterances = [
        WordLabels(f"u{seed}_{i}", tuple("w" * 10), tuple(PUNCT4.classes[y] for y in labels[i : i + 10]))
        for i in range(0, n, 10)
    ]
    return WordPauses(utterances, features, labels)


def test_writes_the_model_and_the_choice(tmp_path):
    request = PauseRequest({"train": tmp_path / "train.jsonl.gz", "dev": tmp_path / "dev.jsonl.gz"}, 4, CONFIG)
    train, dev = split(300, 0), split(100, 1)
    with classifier_threads(1):
        model = train_pause(train, dev, PUNCT4.classes, request, tmp_path / "pause")
    record = json.loads((tmp_path / "pause" / CHOICE_FILE).read_text())
    assert record["features"] == ["pause_after", "pause_before", "duration", "is_last"]
    assert record["seed"] == 4 and record["config"]["tree_depths"] == [2]
    assert record["inputs"] == {"train": str(tmp_path / "train.jsonl.gz"), "dev": str(tmp_path / "dev.jsonl.gz")}
    assert (record["first_word"], record["metric"]) == ("include", "overall")
    assert record["train"] == {"utterances": 30, "words": 300, "skipped": {}}
    assert record["dev"]["words"] == 100 and len(record["grid"]) == 4
    assert record["chosen"]["name"] == model.candidate.describe()
    assert record["chosen"]["dev_overall_f1"] == max(p["dev_overall_f1"] for p in record["grid"])
    loaded = PauseClassifier.load(tmp_path / "pause" / MODEL_FILE)
    np.testing.assert_array_equal(loaded.posteriors(dev.features), model.posteriors(dev.features))


def test_first_words_excluded_and_macro_f1_compared(tmp_path):
    """first_word exclude: each utterance's first word is not fit on and not counted in the dev choice."""
    request = PauseRequest({}, 4, CONFIG, first_word="exclude", metric="macro")
    train, dev = split(300, 0), split(100, 1)
    with classifier_threads(1):
        train_pause(train, dev, PUNCT4.classes, request, tmp_path / "pause")
    record = json.loads((tmp_path / "pause" / CHOICE_FILE).read_text())
    assert (record["train"]["words"], record["dev"]["words"]) == (270, 90)
    assert record["rule"] == "highest dev macro F1 (ties: the earlier candidate)"
    assert record["chosen"]["dev_macro_f1"] == max(p["dev_macro_f1"] for p in record["grid"])


def test_is_trained_only_for_the_same_request(tmp_path):
    inputs = {s: tmp_path / f"{s}.jsonl.gz" for s in ("train", "dev")}
    for path in inputs.values():
        path.write_text("")
    exp = tmp_path / "pause"
    request = PauseRequest(inputs, 4, CONFIG)
    with classifier_threads(1):
        train_pause(split(200, 0), split(100, 1), PUNCT4.classes, request, exp)
    assert not is_trained(exp, request)  # not marked done yet
    mark_done(exp)
    assert is_trained(exp, request)
    other_config = PauseConfig(logistic_c=(2.0,), tree_depths=(2,), tree_iterations=20)
    for other in (
        dataclasses.replace(request, seed=5),
        dataclasses.replace(request, config=other_config),
        dataclasses.replace(request, inputs={**inputs, "test": inputs["dev"]}),
        dataclasses.replace(request, first_word="exclude"),
        dataclasses.replace(request, metric="macro"),
    ):
        assert not is_trained(exp, other), other
    later = (exp / ".done").stat().st_mtime + 10
    os.utime(inputs["dev"], (later, later))  # the dev cuts changed after training
    assert not is_trained(exp, request)
