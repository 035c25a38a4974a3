import numpy as np

from punct.labels import TimedWord
from punct.recognition.recognise import greedy_words, recognise_long

VOCAB = ["<blk>", "|"] + list("abcdefghijklmnopqrstuvwxyzáéíýčěřšžůú")
SR = 1000  # a low sample rate keeps the fake recording small; frames are still 10 ms


def test_greedy_words():
    seq = ["<blk>", "a", "a", "<blk>", "h", "o", "j", "|", "|", "<blk>", "j", "o", "<blk>", "o", "|"]
    lp = np.log(np.full((len(seq), len(VOCAB)), 0.01))
    for t, s in enumerate(seq):
        lp[t, VOCAB.index(s)] = 0.0
    assert greedy_words(lp, VOCAB) == ["ahoj", "joo"]


def plan(num_words, rng):
    words, t = [], 0.6
    pool = ["dobrý", "den", "vážení", "poslanci", "zákon", "rozpočet", "výbor", "návrh", "je", "schválen"]
    for _ in range(num_words):
        w = pool[int(rng.integers(len(pool)))]
        d = 0.06 * len(w)
        words.append(TimedWord(w, round(t, 2), round(t + d, 2)))
        t += d + (0.08 if rng.random() < 0.8 else 2.0)  # sometimes a long pause
    return words, t + 1.0


def fake_model(truth):
    """Log-posteriors for a chunk whose samples are their own absolute times (audio[i] = i / SR)."""

    def posteriors(chunk):
        t0 = float(chunk[0])
        n = len(chunk) * 100 // SR
        probs = np.full((n, len(VOCAB)), 0.01 / len(VOCAB))
        probs[:, 0] = 0.99
        for w in truth:
            f0 = int(round((w.start - t0) * 100))
            step = (w.end - w.start) * 100 / len(w.word)
            for k, ch in enumerate(w.word):
                f = f0 + int(k * step)
                if 0 <= f < n:
                    probs[f] = 0.01 / len(VOCAB)
                    probs[f, VOCAB.index(ch)] = 0.95
            fs = int(round((w.end - t0) * 100))
            if 0 <= fs < n:
                probs[fs] = 0.01 / len(VOCAB)
                probs[fs, 1] = 0.9
        probs /= probs.sum(1, keepdims=True)
        return np.log(probs)

    return posteriors


def test_recognise_long_recovers_words_across_chunks():
    rng = np.random.default_rng(4)
    truth, total = plan(180, rng)
    audio = np.arange(int(total * SR)) / SR
    counts = {}
    got = recognise_long(audio, SR, fake_model(truth), VOCAB, counts=counts)
    assert total > 70 and sum(counts.values()) >= 2  # several chunks were merged
    assert [w.word for w in got] == [w.word for w in truth]
    for g, t in zip(got, truth):
        assert abs(g.start - t.start) <= 0.02 and abs(g.end - t.end) <= 0.08, (g, t)
