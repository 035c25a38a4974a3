"""punct.inference.streaming and ``punctuate --stream`` on a tiny randomly initialised recipe: with an unbounded
latency the stream equals offline ``punctuate`` with the same CTM and CMVN stats; with a small one each word comes
out within the latency, computed as offline computes the recording cut where the stream stood; through a pipe
the first words are printed before the input ends."""

from __future__ import annotations

import io
import json
import math
import shutil
import sys

import numpy as np
import pytest
import soundfile as sf

from punct.labels import TimedWord
from tests.helpers.pipe import feed_pipe, sox_pcm

SECONDS = 40.0
VOCAB = ["hello", "world,", "the", "cat", "sat", "on", "a", "mat.", "why", "not?", "2008", "twenty-one"]


def ctm_tokens(seed: int = 1) -> list[TimedWord]:
    """Tokens over the talk: 0.2-0.5 s each, gaps of 0.02-0.15 s, a pause of 0.5-1.2 s every few tokens, one lone
    mark (said as no word) and a 12 s run without a pause (cut by ``max_stretch``)."""
    rng = np.random.default_rng(seed)
    tokens, t, k = [], 0.3, 0
    while True:
        duration = float(rng.uniform(0.2, 0.5))
        if t + duration > SECONDS - 0.5:
            return tokens
        word = "," if k == 7 else VOCAB[int(rng.integers(len(VOCAB)))]
        tokens.append(TimedWord(word, round(t, 2), round(t + duration, 2)))
        t += duration
        long_run = 10.0 < t < 22.0
        t += float(rng.uniform(0.5, 1.2)) if (not long_run and rng.random() < 0.3) else float(rng.uniform(0.02, 0.15))
        k += 1


@pytest.fixture(scope="module")
def recipe(tmp_path_factory):
    from tests.helpers.random_recipe import random_recipe

    root = random_recipe(tmp_path_factory.mktemp("streaming"), SECONDS)
    (root / "talk.ctm").write_text(
        "".join(f"talk 1 {t.start:.2f} {t.end - t.start:.2f} {t.word}\n" for t in ctm_tokens()), encoding="utf-8"
    )
    return root


@pytest.fixture(scope="module")
def punctuator(recipe):
    from punct.inference.stretches import LongFormConfig
    from tests.helpers.random_recipe import stream_punctuator

    # pauses of 0.5-1.2 s: at 0.4 s every one closes a stretch, as the test of early output needs
    return stream_punctuator(recipe, long_form_config=LongFormConfig(pause_split=0.4, max_stretch=8.0))


def offline(punctuator, recipe, seconds: float = SECONDS):
    """Offline punctuate of the talk's first ``seconds`` with the CTM tokens that end by then."""
    from punct.inference.inputs import Request
    from punct.inference.outputs import Result

    samples, rate = sf.read(recipe / "talk.wav", dtype="float32")
    samples = samples[: int(round(seconds * rate))]
    tokens = [t for t in ctm_tokens() if t.end <= seconds + 1e-9]
    request = Request("talk", lambda: (samples, rate), None, "talk", "talk.wav")
    result = next(iter(punctuator.run([request], {"talk": tokens})))
    assert isinstance(result, Result), result
    return result


def stream(punctuator, recipe, latency: float):
    from punct.inference.streaming import StreamingPunctuator, run_stream, wav_chunks

    streamer = StreamingPunctuator(punctuator, latency, "talk")
    return run_stream(streamer, wav_chunks(recipe / "talk.wav", 1600, 16000), ctm_tokens())


def test_unbounded_latency_equals_offline(punctuator, recipe):
    from punct.inference.streaming import stream_result

    want = offline(punctuator, recipe)
    assert "," not in want.words and len(want.words) > 60
    for latency in (math.inf, 60.0):
        words, stats = stream(punctuator, recipe, latency)
        got = stream_result(words, "talk", punctuator.alpha, SECONDS)
        assert got.words == want.words and got.spans == want.spans
        assert got.labels == want.labels and got.text == want.text
        for name in ("p_tdnn", "p_bert", "p_ensemble"):
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), atol=1e-4, err_msg=name)
        assert all(w.final for w in words)
        # a closed stretch comes out as soon as the word after its pause has arrived, long before the end
        assert sum(w.emitted_at < SECONDS - 10 for w in words) > len(words) / 2
        assert stats.summary()["audio_seconds"] == pytest.approx(SECONDS, abs=0.01)


@pytest.mark.parametrize("latency", [0.5, 2.0])
def test_small_latency_is_the_recording_cut_where_the_stream_stood(punctuator, recipe, latency):
    words, _ = stream(punctuator, recipe, latency)
    want = offline(punctuator, recipe)
    assert [w.word for w in words] == want.words
    early = [w for w in words if not w.final]
    assert len(early) > 10
    for w in words:  # each word within its latency (one 0.1 s chunk late at most)
        assert w.emitted_at <= w.span[1] / 100 + latency + 0.1 + 0.011, w
    final = [w.index for w in words if w.final]  # closed by a pause within the latency: as offline
    assert bool(final) == (latency > 1.0)
    if final:
        np.testing.assert_allclose(np.stack([words[i].p_ensemble for i in final]), want.p_ensemble[final], atol=1e-4)
    # a word punctuated early has the posteriors of offline punctuate on the audio and words so far
    for w in (early[0], early[len(early) // 2], early[-1]):
        cut = offline(punctuator, recipe, w.emitted_at)
        np.testing.assert_allclose(w.p_ensemble, cut.p_ensemble[w.index], atol=1e-4)
        np.testing.assert_allclose(w.p_tdnn, cut.p_tdnn[w.index], atol=1e-4)


# segments of the talk with ctm_tokens(): each boundary inside a pause between words (the last: to the end)
SEGMENTS = [(0.2, 6.0), (6.0, 17.2), (17.25, 30.5), (30.6, None)]


def segment_offline(punctuator, recipe):
    """Offline punctuate of each of SEGMENTS as its own utterance (its samples as inputs.py cuts a segment, its
    CTM words with times from its start, one stretch: no pause cut)."""
    from dataclasses import replace

    from punct.inference.inputs import Request
    from punct.inference.outputs import Result

    samples, rate = sf.read(recipe / "talk.wav", dtype="float32")
    tokens = ctm_tokens()
    whole = replace(punctuator.long_form_config, pause_split=1e9, max_stretch=0.0)
    saved, punctuator.long_form_config = punctuator.long_form_config, whole
    results = []
    try:
        for k, (start, end) in enumerate(SEGMENTS):
            piece = samples[int(round(start * rate)) : None if end is None else int(round(end * rate))]
            end = math.inf if end is None else end
            mine = [t for t in tokens if start <= (t.start + t.end) / 2 < end]
            times = [TimedWord(t.word, t.start - start, t.end - start) for t in mine]
            request = Request(f"seg{k}", lambda piece=piece: (piece, rate), None, "talk", "talk.wav")
            result = next(iter(punctuator.run([request], {request.id: times})))
            assert isinstance(result, Result), result
            results.append(result)
    finally:
        punctuator.long_form_config = saved
    return results


def segment_stream(punctuator, recipe, latency: float):
    from punct.inference.streaming import StreamingPunctuator, run_stream, stream_segments, wav_chunks

    streamer = StreamingPunctuator(punctuator, latency, "talk", stream_segments(SEGMENTS, 16000))
    return run_stream(streamer, wav_chunks(recipe / "talk.wav", 1600, 16000), ctm_tokens())


def test_segments_are_the_stretches(punctuator, recipe):
    """Given segments, each is one stretch: at latency inf the stream equals offline punctuate of each segment
    as an utterance (whatever the pauses inside it); a segment is final once a later segment's word arrived;
    at 1 s every word is within its latency and the final ones are the offline ones."""
    want = segment_offline(punctuator, recipe)
    words, _ = segment_stream(punctuator, recipe, math.inf)
    assert [w.word for w in words] == [w for r in want for w in r.words]
    for name in ("p_tdnn", "p_bert", "p_ensemble"):
        np.testing.assert_allclose(
            np.stack([getattr(w, name) for w in words]), np.concatenate([getattr(r, name) for r in want]), atol=1e-4
        )
    ends = [(start, math.inf if end is None else end) for start, end in SEGMENTS]
    assert all(w.final for w in words)
    for w in words[:-20]:  # out once the next segment's first word has ended, long before the end
        segment_end = next(e for s, e in ends if s * 100 <= w.span[0] < e * 100)
        assert w.emitted_at < segment_end + 3.0, w
    live, _ = segment_stream(punctuator, recipe, 1.0)
    assert [w.word for w in live] == [w.word for w in words]
    assert all(w.emitted_at <= w.span[1] / 100 + 1.0 + 0.1 + 0.011 for w in live)
    final = [w.index for w in live if w.final]
    assert 0 < len(final) < len(live)
    np.testing.assert_allclose(
        np.stack([live[i].p_ensemble for i in final]), np.stack([words[i].p_ensemble for i in final]), atol=1e-4
    )


def test_segments_must_be_in_time_order():
    from punct.inference.streaming import stream_segments

    with pytest.raises(ValueError, match="segment 1 starts at 4.0 s, before segment 0 ends"):
        stream_segments([(0.0, 5.0), (4.0, 8.0)], 16000, "segs")
    with pytest.raises(ValueError, match="segment 0 from 3.0 to 2.0 s"):
        stream_segments([(3.0, 2.0)], 16000, "segs")
    assert stream_segments([(0.5, None)], 16000)[0].first_sample == 8000


def test_stream_needs_fixed_cmvn_and_tokens_in_time_order(punctuator):
    from punct.inference.streaming import StreamingPunctuator

    with pytest.raises(ValueError, match="fixed CMVN"):
        StreamingPunctuator(_without_cmvn(punctuator))
    streamer = StreamingPunctuator(punctuator, 1.0)
    streamer.accept(np.zeros(1600, dtype=np.float32), [TimedWord("cat", 0.5, 0.7)])
    with pytest.raises(ValueError, match="time order"):
        streamer.accept(np.zeros(0, dtype=np.float32), [TimedWord("mat", 0.2, 0.4)])


def _without_cmvn(punctuator):
    import copy

    other = copy.copy(punctuator)
    other.global_cmvn = None
    return other


def test_pcm_chunks_cut_raw_samples():
    from punct.inference.streaming import pcm_chunks

    samples = (np.arange(-500, 501) * 30).astype("<i2")
    chunks = list(pcm_chunks(io.BytesIO(samples.tobytes() + b"\x01"), 256))  # a dangling odd byte is ignored
    assert [c.size for c in chunks] == [256, 256, 256, 233]
    np.testing.assert_array_equal(np.concatenate(chunks), samples / 32768.0)


@pytest.mark.skipif(shutil.which("sox") is None, reason="sox is not installed (install.sh installs it)")
def test_punctuate_stream_through_a_pipe_prints_before_the_input_ends(recipe, tmp_path):
    """sox's raw PCM fed to ``punctuate --stream --wav -`` at 10x real time: the first words come out before the
    input ends, and the printed text is the offline text."""
    pcm = sox_pcm(recipe / "talk.wav")
    command = [sys.executable, "-m", "punct.bin.punctuate", "--stream", "--wav", "-", "--latency", "0.5"]
    command += ["--ctm", str(recipe / "talk.ctm"), "--recipe-dir", str(recipe / "recipe")]
    command += ["--cmvn", str(recipe / "cmvn_train.json"), "--out-dir", str(tmp_path / "out"), "--device", "cpu"]
    run = feed_pipe(command, pcm)
    assert run.returncode == 0, run.stderr
    assert run.first_output is not None and run.first_output < run.input_closed, run.stderr
    text = run.stdout
    assert text.endswith("\n") and len(text.splitlines()) >= 2
    result = json.loads((tmp_path / "out/punct.jsonl").read_text())
    assert " ".join(text.split()) == " ".join((tmp_path / "out/text").read_text().split()[1:])
    assert len(result["words"]) == len((tmp_path / "out/stream.jsonl").read_text().splitlines())


def test_stream_segments_file(tmp_path):
    """``--segments`` with ``--stream``: the lines of the stream's recording, in time order; errors name the line."""
    from punct.bin.punctuate import read_stream_segments

    path = tmp_path / "segments"
    path.write_text("b talk 6.0 9.5\na talk 0.2 5.8\nc other 0.0 1.0\nd talk 9.5 -1\n")
    assert read_stream_segments(path, "talk") == [(0.2, 5.8), (6.0, 9.5), (9.5, None)]
    with pytest.raises(SystemExit, match="no segment of recording 'nothing'"):
        read_stream_segments(path, "nothing")
    path.write_text("a talk 0.2 5.8\nb talk six 9.5\n")
    with pytest.raises(SystemExit, match=r"segments:2: start and end must be seconds"):
        read_stream_segments(path, "talk")
