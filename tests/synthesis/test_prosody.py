"""The prosodies of the mini corpora (punct.synthesis.prosody): pauses measured in real espeak-ng audio."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from punct.synthesis.prosody import (
    BOUNDARY_KINDS,
    BoundaryPauses,
    PauseModel,
    ProsodyPlan,
    boundary_kind,
    draw_plan,
    pauses_per_word,
    phrases_of,
    plan_for,
    prosody_rng,
    resolve_prosody,
    speak,
    tokens_of,
)
from punct.synthesis.tts import Espeak, Voice, word_starts_for_spans
from punct.text.normalize import normalize
from punct.utils.config import config_from_dict, read_yaml

TEXT = (
    "Well, Mr. Darcy, said she, I know nothing of the kind; what is to-morrow? "
    "Did they come? Yes, they did. She smiled and walked on, and nobody followed her."
)
VOICE = Voice("en-us", "m3", 50, 175, 50)


def boundary_silences(audio: np.ndarray, sample_rate: int, starts: list[float], floor_db: float = -40.0) -> list[float]:
    """Per word but the last: the longest run of quiet 10 ms frames (below ``floor_db`` re the loudest frame)
    between its start and the next word's start, in seconds."""
    hop = sample_rate // 100
    frames = audio[: len(audio) // hop * hop].reshape(-1, hop)
    energy = np.sqrt(np.mean(frames.astype(np.float64) ** 2, axis=1)) + 1e-12
    quiet = 20 * np.log10(energy / energy.max()) < floor_db
    silences = []
    for a, b in zip(starts, starts[1:]):
        longest = run = 0
        for q in quiet[int(a * 100) : int(b * 100)]:
            run = run + 1 if q else 0
            longest = max(longest, run)
        silences.append(longest / 100)
    return silences


def spoken(prosody: str, seed: int = 3, model: PauseModel | None = None):
    engine = Espeak.get()
    words = normalize(TEXT)
    synth, plan = speak(
        engine,
        TEXT,
        words.spans,
        VOICE,
        prosody,
        resolve_prosody(prosody, model),
        np.random.default_rng(seed),
        [label != "NP" for label in words.labels],
    )
    starts = word_starts_for_spans(
        synth.words,
        words.spans,
        synth.phonemes,
        lambda i: engine.phoneme_count(TEXT[words.spans[i][0] : words.spans[i][1]], VOICE),
    )
    return words, synth, plan, starts


def test_boundary_kinds_from_the_text_between_words():
    assert boundary_kind(", ") == "comma"
    assert boundary_kind('?" ') == "question"
    assert boundary_kind(' -- "') == "dash"
    assert boundary_kind("-") == "none"  # a hyphen inside a written word
    assert boundary_kind("; ") == "semicolon"
    assert boundary_kind(' "') == "none"
    assert boundary_kind("!? ") == "question"  # the strongest mark decides
    text = "Mr. Darcy came, 1,000 men."
    words = normalize(text)
    tokens = tokens_of(text, words.spans, [label != "NP" for label in words.labels])
    # "one thousand" share the span of "1,000": one token; the dot of "Mr." is no full stop
    assert [text[t.begin : t.end] for t in tokens] == ["Mr", "Darcy", "came", "1,000", "men"]
    assert [t.kind for t in tokens] == ["none", "none", "comma", "none", "full_stop"]


def test_marks_speaks_the_text_as_written():
    engine = Espeak.get()
    words = normalize(TEXT)
    synth, plan = speak(engine, TEXT, words.spans, VOICE, "marks")
    assert plan is None
    # the text itself, marks and all (espeak-ng's hidden state moves a synthesis by up to a few percent after other
    # texts in one process, so the lengths are compared loosely; the words spoken are the same)
    as_written = engine.synthesize(TEXT, VOICE)
    assert abs(len(synth.audio) - len(as_written.audio)) < 0.05 * len(as_written.audio)
    assert [(w.offset, w.length) for w in synth.words] == [(w.offset, w.length) for w in as_written.words]
    without_marks, _ = speak(engine, TEXT, words.spans, VOICE, "none")
    assert len(without_marks.audio) < 0.8 * len(synth.audio)  # the marks' pauses


def test_none_has_no_pause_at_any_mark():
    words, synth, plan, starts = spoken("none")
    assert starts is not None, "word events of the phrase must map back to the text's words"
    assert plan.pauses == [0.0] * len(plan.pauses) and not any(plan.rises)
    silences = boundary_silences(synth.audio, synth.sample_rate, starts)
    marked = [s for s, label in zip(silences, words.labels) if label != "NP"]
    assert len(marked) >= 8
    assert max(silences) < 0.15, list(zip(words.words, words.labels, silences))
    # the same text spoken with its marks has the pauses that none removes
    _, with_marks, _, mark_starts = spoken("marks")
    assert mark_starts is not None
    marks_silences = boundary_silences(with_marks.audio, with_marks.sample_rate, mark_starts)
    assert sum(s > 0.1 for s, label in zip(marks_silences, words.labels) if label != "NP") >= 6


def test_natural_pauses_are_where_the_model_drew_them():
    model = PauseModel(none=BoundaryPauses(0.2, 400.0, 0.3), comma=BoundaryPauses(0.5, 400.0, 0.3))
    words, synth, plan, starts = spoken("natural", seed=11, model=model)
    assert starts is not None
    drawn = pauses_per_word(plan, words.spans)
    silences = boundary_silences(synth.audio, synth.sample_rate, starts)
    assert any(d > 0 for d, label in zip(drawn, words.labels) if label == "NP"), "no pause drawn at a no-mark boundary"
    assert any(d == 0 for d, label in zip(drawn, words.labels[:-1]) if label != "NP"), "every mark drew a pause"
    for word, pause, silence in zip(words.words, drawn, silences):
        if pause == 0:
            assert silence < 0.15, (word, silence)
        else:
            assert silence >= pause - 0.04, (word, pause, silence)  # 10 ms frames at both ends


def test_the_same_seed_draws_the_same_plan_from_its_own_stream():
    # the audio of a seed: tests/corpora/test_mini_english.py (espeak-ng speaks the same only in a fresh process)
    plans = [spoken("natural", seed=seed)[2] for seed in (5, 5, 6)]
    assert plans[0] == plans[1] and plans[0] != plans[2]
    assert prosody_rng([42, 1, 2]).random() == prosody_rng([42, 1, 2]).random()
    assert prosody_rng([42, 1, 2]).random() != np.random.default_rng([42, 1, 2]).random()


@pytest.mark.parametrize("kind", BOUNDARY_KINDS)
def test_drawn_rates_match_the_configuration(kind):
    model = PauseModel()
    n = 1000
    plan = draw_plan([kind] * (n + 1), model, np.random.default_rng(1))  # the last boundary ends the text
    pauses = np.array(plan.pauses[:n])
    expected = model.at(kind)
    rate = np.mean(pauses > 0)
    sd = np.sqrt(expected.probability * (1 - expected.probability) / n)
    assert abs(rate - expected.probability) <= 4 * sd + 1e-9, (kind, rate, expected.probability)
    if expected.probability > 0.1:
        lengths = np.log(pauses[pauses > 0] * 1000)
        assert abs(np.median(lengths) - np.log(expected.median_ms)) < 4 * expected.log_sd / np.sqrt(len(lengths))
        assert abs(np.std(lengths) - expected.log_sd) < 0.15 * expected.log_sd
    rises = np.mean(plan.rises[:n])
    if kind == "question":
        q = model.question_rise
        assert abs(rises - q) <= 4 * np.sqrt(q * (1 - q) / n)
    else:
        assert rises == 0


def test_a_rise_breaks_the_phrase_even_without_a_pause():
    plan = ProsodyPlan(["none", "question", "none", "full_stop"], [0.0, 0.0, 0.3, 0.0], [False, True, False, False])
    phrases = phrases_of(plan)
    assert [p.tokens for p in phrases] == [[0, 1], [2], [3]]
    assert [p.rise for p in phrases] == [True, False, False]
    assert [p.pause_after for p in phrases] == [0.0, 0.3, 0.0]


def test_prosody_choices_are_checked():
    with pytest.raises(ValueError, match="unknown prosody"):
        plan_for("loud", [], None, None)
    with pytest.raises(ValueError, match="natural prosody only"):
        resolve_prosody("marks", PauseModel())
    assert resolve_prosody("natural", None) == PauseModel()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        BoundaryPauses(1.5)


def test_the_recipes_configs_load_and_the_defaults_are_the_english_ones():
    root = Path(__file__).resolve().parents[2]
    models = {
        recipe: config_from_dict(PauseModel, read_yaml(root / "egs" / recipe / "conf" / "prosody.yaml"), recipe)
        for recipe in ("mustc", "parczech")
    }
    assert models["mustc"] == PauseModel()
    assert models["parczech"].comma.probability > models["mustc"].comma.probability
