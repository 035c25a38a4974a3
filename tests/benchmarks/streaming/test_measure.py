"""benchmarks.streaming.measure: F1 against latency on a talk of a tiny random recipe (latency inf scores what offline
``punctuate`` gives with the same CTM)."""

from __future__ import annotations

import math

import pytest

TEXTS = ["Hello world, the cat sat on a mat.", "Why not? The cat sat, hello.", "On a mat the world sat. Why?"]


@pytest.fixture(scope="module")
def talk_and_punctuator(tmp_path_factory):
    from lhotse import SupervisionSegment

    from benchmarks.streaming.talk import ScoredTalk
    from tests.helpers.random_recipe import random_recipe, stream_punctuator

    root = random_recipe(tmp_path_factory.mktemp("latency"), 12.0)
    sups = [
        SupervisionSegment(f"talk-{k}", "talk", 0.5 + 4 * k, 3.5, text=text, speaker="spk")
        for k, text in enumerate(TEXTS)
    ]
    # the stream is scored on the segments' texts normalised as now (``reference``), not on stored labels
    return ScoredTalk("talk", root / "talk.wav", "spk", sups, []), stream_punctuator(root)


def test_latency_rows_score_the_stream_and_offline(talk_and_punctuator):
    from benchmarks.streaming.measure import latency_rows, reference, talk_tokens
    from benchmarks.streaming.talk import overall_f1
    from punct.inference.inputs import from_pair

    talk, punctuator = talk_and_punctuator
    rows = latency_rows(punctuator, [talk], [0.3, math.inf], log=lambda _: None)
    words, ref = reference(talk, punctuator.normalize_config)
    assert words[:4] == ["hello", "world", "the", "cat"] and len(ref) == len(words) == rows[0]["words"]
    assert rows[1]["latency"] == "inf" and rows[1]["final_share"] == 1.0
    assert rows[0]["final_share"] < 1.0 and rows[0]["wait_max"] <= 0.3 + 0.1 + 0.011
    for row in rows:  # the alpha grid's ends are the two models alone; the punctuator's own alpha is the ensemble
        by_alpha = row["f1_by_alpha"]
        assert len(by_alpha) == 11 and by_alpha["0.0"] == row["f1"]["BERT"] and by_alpha["1.0"] == row["f1"]["TDNN"]
        assert by_alpha[str(round(punctuator.alpha, 1))] == pytest.approx(row["f1"]["ensemble"], abs=1e-9)
    for row in rows:  # the parts' CPU time is inside the stream's, each latency's counted alone
        parts = row["rtf_cpu_parts"]
        assert min(parts["features"], parts["am"], parts["bert"], parts["tdnn"]) > 0, parts
        assert sum(parts.values()) <= row["rtf_cpu"] * 1.001, (parts, row["rtf_cpu"])
    tokens = talk_tokens(punctuator, talk)
    assert [t.word for t in tokens] == words and all(t.end > t.start for t in tokens)
    offline = next(iter(punctuator.run([from_pair(talk.audio_path, None, "talk")], {"talk": tokens})))
    for model, posteriors in (("ensemble", offline.p_ensemble), ("TDNN", offline.p_tdnn), ("BERT", offline.p_bert)):
        assert rows[1]["f1"][model] == pytest.approx(overall_f1(ref, posteriors.argmax(1)), abs=1e-9), model


def test_lookahead_posteriors_read_only_k_words_ahead(talk_and_punctuator):
    import numpy as np

    from benchmarks.streaming.measure import lookahead_posteriors, lookahead_rows
    from benchmarks.streaming.talk import overall_f1
    from punct.labels import encode_labels
    from punct.models.text.data import Utterance
    from punct.text.normalize import words_and_labels

    _, punctuator = talk_and_punctuator
    head = punctuator.head
    utts = [Utterance(f"u{k}", *words_and_labels(text)) for k, text in enumerate(TEXTS)]
    whole = np.concatenate([out.posteriors[head] for out in punctuator.text_outputs(utts)])  # stage 6's
    np.testing.assert_allclose(lookahead_posteriors(punctuator, utts, None), whole, atol=1e-6)
    longest = max(len(u.words) for u in utts)
    np.testing.assert_allclose(lookahead_posteriors(punctuator, utts, longest - 1), whole, atol=1e-6)
    for k in (0, 2):  # word w from the words up to w + k only: the random BERT reads the words after it too
        got = lookahead_posteriors(punctuator, utts, k)
        u = utts[1]
        w = 3
        first = sum(len(v.words) for v in utts[:1])
        alone = punctuator.text_outputs([Utterance("p", u.words[: w + k + 1], u.labels[: w + k + 1])])[0]
        np.testing.assert_allclose(got[first + w], alone.posteriors[head][w], atol=1e-6)
        assert not np.allclose(got, whole, atol=2e-5)  # its right context moves them by ~1e-4
    rows = lookahead_rows(punctuator, utts, [0, None], log=lambda _: None)
    refs = [c for u in utts for c in encode_labels(u.labels)]
    assert [r["lookahead"] for r in rows] == [0, "all"] and rows[0]["words"] == len(refs) == 21
    assert rows[1]["f1"] == pytest.approx(overall_f1(refs, whole.argmax(1)), abs=1e-9)
