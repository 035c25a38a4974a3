import numpy as np
import pytest

from punct.recognition.chunks import (
    AudioChunk,
    ChunkConfig,
    TimedWord,
    ctc_word_times,
    merge_chunk_words,
    merge_two,
    plan_chunks,
)

VOCAB = ["<blk>", " "] + list("abcdefghijklmnopqrstuvwxyzáéíýčěřšžůú")


def test_plan_chunks():
    sr = 100
    chunks = plan_chunks(70 * sr, sr)
    assert chunks == [AudioChunk(0, 3000), AudioChunk(2500, 5500), AudioChunk(5000, 7000)]
    assert plan_chunks(20 * sr, sr) == [AudioChunk(0, 2000)]
    assert plan_chunks(55 * sr, sr) == [AudioChunk(0, 3000), AudioChunk(2500, 5500)]
    # overlaps are exactly 5 s and every sample is covered
    ch = plan_chunks(1234567, 16000)
    assert ch[0].start == 0 and ch[-1].end == 1234567
    for a, b in zip(ch, ch[1:]):
        assert a.end - b.start == 5 * 16000
    with pytest.raises(ValueError):
        plan_chunks(100, 10, ChunkConfig(chunk_seconds=5, overlap_seconds=5))


def planted_posteriors(words, starts, num_frames, rng, char_frames=3):
    """Log-posteriors with each word's characters spread from its planted start frame."""
    V = len(VOCAB)
    probs = np.full((num_frames, V), 0.02 / (V - 1))
    probs[:, 0] = 0.98
    truth = []
    for w, s in zip(words, starts):
        t = s
        for c in w:
            for _ in range(char_frames):
                probs[t] = 0.02 / (V - 1)
                probs[t, VOCAB.index(c)] = 0.9 + 0.05 * rng.random()
                probs[t, 0] = 0.05
                t += 1
        truth.append((s, t))
        probs[t, 1] = 0.7  # the word separator right after the word
        probs[t, 0] = 0.25
    probs /= probs.sum(1, keepdims=True)
    return np.log(probs), truth


def test_ctc_word_times_recovers_planted_times():
    rng = np.random.default_rng(0)
    words = ["dobrý", "den", "vážení", "poslanci", "a", "poslankyně"]
    starts = [10, 40, 65, 120, 170, 180]
    lp, truth = planted_posteriors(words, starts, 260, rng)
    got = ctc_word_times(lp, VOCAB, words, frame_shift=0.01, offset=25.0)
    assert [w.word for w in got] == words
    for w, (s, e) in zip(got, truth):
        assert abs(w.start - (25.0 + s * 0.01)) <= 0.011, (w, s)
        # the end is the last character's first frame + one frame (peaky CTC): within its 3 frames
        assert abs(w.end - (25.0 + e * 0.01)) <= 0.021, (w, e)
        assert w.score <= 0.0


def test_ctc_word_times_errors():
    lp = np.log(np.full((5, len(VOCAB)), 1.0 / len(VOCAB)))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        ctc_word_times(lp, VOCAB, ["x1"])
    with pytest.raises(ValueError, match="more frames"):
        ctc_word_times(lp, VOCAB, ["abc", "de"])
    with pytest.raises(ValueError, match="shape"):
        ctc_word_times(lp[:, :3], VOCAB, ["a"])


def tw(word, start, end=None):
    return TimedWord(word, start, start + 0.3 if end is None else end)


def test_merge_matched_at_midpoint_drops_edge_errors():
    # overlap [25, 30]; chunk 0 mishears the cut word at its edge, chunk 1 its first word
    left = [tw("a", 20), tw("b", 24), tw("c", 26), tw("d", 27.5), tw("xx", 29.8)]
    right = [tw("yy", 25.0), tw("c", 26.02), tw("d", 27.51), tw("e", 29.8), tw("f", 31)]
    words, case = merge_two(left, right, 25.0, 30.0)
    assert case == "matched"
    assert [w.word for w in words] == ["a", "b", "c", "d", "e", "f"]


def test_merge_no_match_discards_overlap_and_silence_concatenates():
    left = [tw("a", 20), tw("b", 26), tw("xx", 29.8)]
    right = [tw("yy", 25.1), tw("q", 27), tw("f", 31)]
    words, case = merge_two(left, right, 25.0, 30.0)
    assert case == "discarded" and [w.word for w in words] == ["a", "f"]
    words, case = merge_two([tw("a", 20)], [tw("f", 31)], 25.0, 30.0)
    assert case == "concatenated" and [w.word for w in words] == ["a", "f"]


def test_merge_chunk_words_three_chunks():
    sr = 100
    chunks = plan_chunks(60 * sr, sr)
    truth = [tw(f"w{k}", 0.7 * k + 0.1) for k in range(85)]  # a word every 0.7 s
    per_chunk = []
    for c in chunks:
        s, e = c.start / sr, c.end / sr
        per_chunk.append([w for w in truth if w.start >= s and w.end <= e])
    counts = {}
    merged = merge_chunk_words(per_chunk, chunks, sr, counts=counts)
    assert merged == truth and counts == {"matched": 2}
