"""espeak word timings (punct.synthesis.tts): word starts from word and phoneme events, real synthesis."""

from __future__ import annotations

import re

import numpy as np
import pytest

from punct.synthesis.tts import Espeak, PhonemeEvent, Voice, WordEvent, word_starts_for_spans
from punct.text.normalize import normalize


def test_word_starts_mapping_rules():
    events = [WordEvent(0, 4, 0.0), WordEvent(5, 3, 0.5), WordEvent(9, 0, 0.7), WordEvent(11, 4, 1.0)]
    text = "Emma was --here"
    spans = [m.span() for m in re.finditer(r"\w+", text)]
    # '--here' event points at the dash before the word; the zero-length event is ignored.
    assert word_starts_for_spans(events, spans) == [0.0, 0.5, 1.0]
    # A word without an event of its own (two words merged into one event) -> None.
    assert word_starts_for_spans([WordEvent(0, 8, 0.0), WordEvent(11, 4, 1.0)], spans) is None
    # A second event inside one word ("1,000" read as two events) is skipped.
    spans2 = [(0, 5), (6, 8)]
    assert word_starts_for_spans([WordEvent(0, 2, 0.0), WordEvent(1, 2, 0.3), WordEvent(6, 2, 0.9)], spans2) == [
        0.0,
        0.9,
    ]


def test_merged_word_events_are_split_by_phonemes():
    text = "not a man"
    spans = [(0, 3), (4, 5), (6, 9)]
    events = [WordEvent(0, 3, 0.0), WordEvent(6, 3, 0.5)]  # "not a" merged into one event
    phonemes = [
        PhonemeEvent(0, 0.0, "n"),
        PhonemeEvent(0, 0.1, "0"),
        PhonemeEvent(0, 0.2, "t#"),
        PhonemeEvent(0, 0.25, "_"),
        PhonemeEvent(0, 0.3, "@"),
        PhonemeEvent(6, 0.5, "m"),
        PhonemeEvent(6, 0.6, "a"),
        PhonemeEvent(6, 0.7, "n"),
    ]
    counts = {0: 3, 1: 1, 2: 3}
    assert word_starts_for_spans(events, spans) is None
    assert word_starts_for_spans(events, spans, phonemes, counts.__getitem__) == [0.0, 0.3, 0.5]
    # Counts that do not add up to the group's phonemes (pauses excluded): no guess.
    assert word_starts_for_spans(events, spans, phonemes, {0: 3, 1: 2, 2: 3}.__getitem__) is None
    assert text[spans[1][0] : spans[1][1]] == "a"


def test_real_merged_words_get_increasing_starts():
    engine = Espeak.get()
    voice = Voice("en-us", "", 50, 170)
    text = "Is he not a man of honour? It has been in the house."
    synth = engine.synthesize(text, voice)
    spans = normalize(text).spans
    assert word_starts_for_spans(synth.words, spans) is None  # espeak merges "not a", "has been", "in the"
    starts = word_starts_for_spans(
        synth.words, spans, synth.phonemes, lambda i: engine.phoneme_count(text[spans[i][0] : spans[i][1]], voice)
    )
    assert starts is not None and len(starts) == len(spans)
    assert all(b > a for a, b in zip(starts, starts[1:]))
    assert engine.phoneme_count("greatest", voice) == 7 and engine.phoneme_count("a", voice) == 1


def test_espeak_synthesis_and_word_events():
    engine = Espeak.get()
    text = "Is it true, my friend? The garden is large."
    slow = engine.synthesize(text, Voice("en-us", "m3", 40, 130))
    fast = engine.synthesize(text, Voice("en-us", "m3", 40, 260))
    assert slow.sample_rate == 22050 and slow.audio.dtype == np.float32
    assert np.abs(slow.audio).max() > 0.05
    assert len(fast.audio) < 0.75 * len(slow.audio)  # rate is applied on every call
    again = engine.synthesize(text, Voice("en-us", "m3", 40, 130))
    # rate is reset (espeak keeps some hidden state, so only up to a few samples)
    assert abs(len(again.audio) - len(slow.audio)) < 0.01 * len(slow.audio)
    starts = word_starts_for_spans(slow.words, normalize(text).spans)
    assert starts is not None and len(starts) == 9
    assert all(b > a for a, b in zip(starts, starts[1:]))
    assert starts[-1] < len(slow.audio) / slow.sample_rate
    with pytest.raises(ValueError, match="no voice"):
        engine.synthesize("hello", Voice("xx-nonexistent"))
