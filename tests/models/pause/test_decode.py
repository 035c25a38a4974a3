"""The pause-only outputs: posterior shards by utterance (egs/mustc), decode records (egs/parczech)."""

from __future__ import annotations

import numpy as np
import pytest

from punct.io.shards import MatrixReader
from punct.labels import PUNCT4, PUNCT9, WordLabels
from punct.models.pause.decode import itn_predictions, write_itn_decode, write_posteriors
from punct.models.pause.features import WordPauses
from punct.models.pause.model import PauseCandidate, PauseClassifier, PauseConfig, fit
from punct.scoring.itn import read_predictions

CANDIDATE = PauseCandidate("logistic", "none", c=10.0)


def pauses(classes, case: bool) -> WordPauses:
    """Two utterances (3 and 2 words) whose mark is told by the silence after each word."""
    marks = [[classes[0], classes[1], classes[2]], [classes[1], classes[0]]]
    utterances = [
        WordLabels(f"u{i}", tuple(f"w{j}" for j in range(len(m))), tuple(m), ("cap",) * len(m) if case else None)
        for i, m in enumerate(marks)
    ]
    index = {c: i for i, c in enumerate(classes)}
    labels = np.array([index[x] for m in marks for x in m])
    features = np.stack([0.3 * labels, np.zeros(5), np.full(5, 0.3), [0, 0, 1, 0, 1]], axis=1)
    return WordPauses(utterances, features, labels)


def trained(classes) -> PauseClassifier:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, 300)
    features = np.stack([0.3 * labels + rng.normal(0, 0.02, 300), *rng.random((3, 300))], axis=1)
    return fit(CANDIDATE, PauseConfig(), features, labels, classes, seed=0)


def test_posteriors_by_utterance(tmp_path):
    data = pauses(PUNCT4.classes, case=False)
    model = trained(PUNCT4.classes)
    assert write_posteriors(model, data, tmp_path / "dev" / "post") == 2
    reader = MatrixReader(tmp_path / "dev" / "post.scp")
    assert reader.keys() == ["u0", "u1"] and (tmp_path / "dev" / "post.scp.done").is_file()
    assert reader["u0"].shape == (3, 4) and reader["u1"].shape == (2, 4)
    np.testing.assert_allclose(np.concatenate([reader["u0"], reader["u1"]]), model.posteriors(data.features))
    assert [reader[k].argmax(1).tolist() for k in ("u0", "u1")] == [[0, 1, 2], [1, 0]]


@pytest.mark.parametrize("first_word", ["include", "exclude"])
def test_itn_records(tmp_path, first_word):
    data = pauses(PUNCT9.classes, case=True)
    model = trained(PUNCT9.classes)
    records = itn_predictions(model, data, first_word)
    assert [r["id"] for r in records] == ["u0", "u1"]
    assert records[0]["punct_hyp"] == ["blank", ",", "."] and records[1]["punct_hyp"] == [",", "blank"]
    first_case = "cap" if first_word == "exclude" else "blank"  # exclude: the first word's labels are copied
    assert records[0]["case_hyp"] == [first_case, "blank", "blank"]
    assert all(r["first_word"] == first_word and r["case_ref"] == ["cap"] * len(r["words"]) for r in records)
    write_itn_decode(model, data, first_word, tmp_path / "decode" / "dev.jsonl")
    read = read_predictions(tmp_path / "decode" / "dev.jsonl")
    assert [s.id for s in read] == ["u0", "u1"] and read[0].first_word == first_word


def test_itn_records_need_punct9_and_case():
    with pytest.raises(ValueError, match="punct9"):
        itn_predictions(trained(PUNCT4.classes), pauses(PUNCT4.classes, case=True), "include")
    with pytest.raises(ValueError, match="no case labels"):
        itn_predictions(trained(PUNCT9.classes), pauses(PUNCT9.classes, case=False), "include")
