"""Live punctuation and case with a stage-4 model (punct.inference.itn_stream, punct.bin.punctuate_itn): segments cut
at pauses, labels equal to the model on those segments (latency inf) and to the segments streamed by
benchmarks.itn_streaming.segments (a latency), the first-word rule, and text printed through a pipe before the input
ends."""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import sys

import numpy as np
import pytest
import soundfile as sf
import torch
from lhotse import Recording, RecordingSet

from benchmarks.itn_streaming.segments import stream_split
from punct.inference.itn_stream import ItnStreamer, SegmentRule
from punct.inference.streaming import run_stream, wav_chunks
from punct.labels import CAP, PUNCT9
from punct.models.cross_attention.data import ItnDataset, read_segments
from punct.models.cross_attention.predictions import predict
from tests.helpers.cross_attention import random_live_model
from tests.helpers.pipe import feed_pipe, sox_pcm

CPU = torch.device("cpu")
RATE = 16000
GAP = 1.1  # seconds of silence added between the corpus' segments: pauses of 1.2 s, cut at multiples of 0.1 s


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    """A random multimodal model (first_word exclude), a stream of the tiny corpus' segments with GAP seconds of
    silence between them, its CTM, and the segments a pause split of 1 s must find, as a dataset of that wav."""
    root = tmp_path_factory.mktemp("itn_stream")
    model, cfg, data = random_live_model(root, num_segments=5)

    audio, _ = sf.read(root / "corpus" / "rec.wav", dtype="float32")
    pieces, segments, ctm, t = [], [], [], 0.0
    for seg in read_segments(data / "parczech_supervisions_dev.jsonl.gz"):
        pieces.append(audio[int(round(seg.start * RATE)) : int(round((seg.start + seg.duration) * RATE))])
        pieces.append(np.zeros(int(round(GAP * RATE)), dtype=np.float32))
        segments.append(seg._replace(recording_id="stream", start=t))
        ctm += [f"stream 1 {t + s:.3f} {e - s:.3f} {w}" for w, s, e in zip(seg.words, seg.word_starts, seg.word_ends)]
        t += seg.duration + GAP
    wav = root / "stream.wav"
    sf.write(wav, np.concatenate(pieces), RATE)
    (root / "stream.ctm").write_text("\n".join(ctm) + "\n", encoding="utf-8")
    # the segments cut at the middle of each pause: from the middle of the pause before to the middle of the one after
    ends = [s.start + s.word_ends[-1] for s in segments]
    starts = [s.start + s.word_starts[0] for s in segments]
    bounds = [0.0] + [(a + b) / 2 for a, b in zip(ends, starts[1:])] + [t]
    cut = [
        s._replace(
            id=f"s{k}",
            start=bounds[k],
            duration=bounds[k + 1] - bounds[k],
            word_starts=[x + s.start - bounds[k] for x in s.word_starts],
            word_ends=[x + s.start - bounds[k] for x in s.word_ends],
        )
        for k, s in enumerate(segments)
    ]
    recording = Recording.from_file(wav, recording_id="stream")
    include = dataclasses.replace(cfg, first_word="include")
    dataset = ItnDataset(cut, RecordingSet.from_recordings([recording]), model.text.tokenizer, include, True)
    return model, cfg, include, dataset, wav, root / "stream.ctm", root


def _run(model, cfg, wav, ctm, latency):
    from punct.am.ctm import read_timed_words

    streamer = ItnStreamer(model, cfg, latency, SegmentRule(pause_split=1.0), "stream")
    words, _ = run_stream(streamer, wav_chunks(wav, int(0.1 * RATE), RATE), read_timed_words(ctm)["stream"])
    return streamer, words


def _by_segment(dataset, words):
    out, i = [], 0
    for seg in dataset.segments:
        out.append(words[i : i + len(seg.words)])
        i += len(seg.words)
    return out


def test_latency_inf_is_the_model_on_the_segments_between_pauses(stream):
    model, cfg, include, dataset, wav, ctm, _ = stream
    streamer, words = _run(model, cfg, wav, ctm, math.inf)
    assert streamer.segments == len(dataset)
    assert [w.word for w in words] == [w for s in dataset.segments for w in s.words]
    assert all(w.final for w in words)
    whole = predict(model, dataset, include, CPU, 0)
    for k, seg_words in enumerate(_by_segment(dataset, words)):
        assert [w.label for w in seg_words[1:]] == whole.punct_hyp[k][1:]
        assert [w.case for w in seg_words[1:]] == whole.case_hyp[k][1:]
        first = seg_words[0]  # the first-word rule: no mark; a capital at the start and after a sentence end
        previous = words[first.index - 1].label if k else "."
        assert first.first and first.label == PUNCT9.none
        assert (first.case == CAP) == (previous in (".", "!", "?"))
    assert len({w.label for w in words}) > 1


def test_a_latency_gives_the_labels_of_the_bench_simulation(stream):
    """Streamed at 0.3 s, every word gets the labels itn_latency's cut of its segment gives it (the bench's
    measurement is what a live stream prints), and a word waits at least the latency unless its segment closed."""
    model, cfg, include, dataset, wav, ctm, _ = stream
    _, words = _run(model, cfg, wav, ctm, 0.3)
    simulated = stream_split(model, dataset, include, 0.3, CPU, 0).predictions
    offline = predict(model, dataset, include, CPU, 0)
    differs = 0
    for k, seg_words in enumerate(_by_segment(dataset, words)):
        assert [w.label for w in seg_words[1:]] == simulated.punct_hyp[k][1:]
        assert [w.case for w in seg_words[1:]] == simulated.case_hyp[k][1:]
        differs += sum(a != b for a, b in zip(simulated.punct_hyp[k][1:], offline.punct_hyp[k][1:]))
    assert differs > 0  # the cut changes some labels: the comparison can fail
    for w in words:
        assert w.emitted_at >= w.end - 1e-6
        if not w.final:
            assert 0.3 - 1e-6 <= w.emitted_at - w.end < 0.4 + 1e-6
    assert not any(w.final for w in words)  # each segment ends 0.6 s after its last word: all due before it closes


@pytest.mark.skipif(shutil.which("sox") is None, reason="sox is not installed (install.sh installs it)")
def test_punctuate_itn_through_a_pipe_prints_before_the_input_ends(stream):
    model, cfg, _, _, wav, ctm, root = stream
    out = root / "pipe.jsonl"
    command = [sys.executable, "-m", "punct.bin.punctuate_itn", "--model", str(root / "mm.pt"), "--wav", "-"]
    command += ["--ctm", str(ctm), "--latency", "0.5", "--out", str(out)]
    run = feed_pipe(command, sox_pcm(wav))
    assert run.returncode == 0, run.stderr
    assert run.first_output is not None and run.first_output < run.input_closed, run.stderr
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    _, words = _run(model, cfg, wav, ctm, 0.5)
    assert [(r["word"], r["label"], r["case"]) for r in records] == [(w.word, w.label, w.case) for w in words]
    assert " ".join(run.stdout.split()) == " ".join(w.text for w in words)
